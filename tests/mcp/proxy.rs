//! `send-once mcp proxy` in front of a fake upstream (`examples/mcp_upstream.rs`,
//! written with rmcp) whose tools append a line to a file each time they act: a call
//! made twice, from two proxies, or from eight at once acts once; a lost answer is
//! unknown until a person settles it; a held call is made once a person approved it,
//! with the arguments they approved.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::mcp::{Client, call, connect_with, fake_upstream, ok, refused, text};
use crate::harness::{expect_exit, json_stdout, send_once, wait_until};

pub(crate) const POLICY: &str = r#"
upstream = "fake"
[default]
mode = "hold"
[tools.append]
mode = "once"
to = "to"
exclude = ["request_id", "seconds"]
timeout = "2s"
[tools.append_with_progress]
mode = "once"
[tools.die_after]
mode = "once"
[tools.refuse]
mode = "once"
[tools.read_log]
mode = "pass"
"#;

/// `append` held for a person instead.
pub(crate) const HOLD: &str = r#"
upstream = "fake"
[default]
mode = "once"
[tools.append]
mode = "hold"
to = "to"
"#;

/// A policy whose `append` calls, made in `mode`, are keyed by their recipient alone:
/// its other arguments (but the volatile `request_id`) are the call's, not its key's.
fn keyed_by_recipient(mode: &str) -> String {
    format!(
        "upstream = \"fake\"\n[default]\nmode = \"once\"\n[tools.append]\nmode = \"{mode}\"\nto = \"to\"\nkey = [\"to\"]\nexclude = [\"request_id\"]\n"
    )
}

/// A ledger, a policy, the fake's log, and proxies started on them.
pub(crate) struct Bench {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) fake: PathBuf,
    /// Where the ledger is, when not in `dir`.
    ledger_at: Option<PathBuf>,
}

impl Bench {
    pub(crate) fn new(policy: &str) -> Option<Bench> {
        let fake = fake_upstream()?;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, policy).unwrap();
        Some(Bench {
            dir,
            fake,
            ledger_at: None,
        })
    }

    /// The same bench with its ledger at `path` (on a disk of the test's own).
    pub(crate) fn with_ledger_at(self, path: PathBuf) -> Bench {
        Bench {
            ledger_at: Some(path),
            ..self
        }
    }

    pub(crate) fn ledger(&self) -> PathBuf {
        self.ledger_at
            .clone()
            .unwrap_or_else(|| self.dir.path().join("l.db"))
    }

    pub(crate) fn log(&self) -> PathBuf {
        self.dir.path().join("acted.log")
    }

    /// The lines the upstream's tools wrote: one per time a tool acted.
    pub(crate) fn acted(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `mcp proxy` on the ledger and policy, with `extra` options, in front of the fake.
    pub(crate) fn proxy_args(&self, extra: &[&str]) -> Vec<String> {
        self.proxy_args_on(&self.ledger(), extra, &[self.fake.to_str().unwrap()])
    }

    /// `mcp proxy` on `ledger` and the policy, with `extra` options, in front of
    /// `upstream` (a command line).
    pub(crate) fn proxy_args_on(
        &self,
        ledger: &Path,
        extra: &[&str],
        upstream: &[&str],
    ) -> Vec<String> {
        let policy = self.dir.path().join("policy.toml");
        let mut args = vec!["mcp", "proxy", ledger.to_str().unwrap()];
        args.extend(["--policy", policy.to_str().unwrap()]);
        args.extend(extra);
        args.push("--");
        args.extend(upstream);
        args.into_iter().map(str::to_owned).collect()
    }

    /// [`Bench::proxy_args_on`] run to its end with no agent (its input empty), as a
    /// proxy refused at start is.
    pub(crate) fn run_proxy(
        &self,
        ledger: &Path,
        extra: &[&str],
        upstream: &[&str],
    ) -> std::process::Output {
        std::process::Command::new(crate::harness::bin())
            .args(self.proxy_args_on(ledger, extra, upstream))
            .env("FAKE_UPSTREAM_LOG", self.log())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    pub(crate) async fn proxy(&self, agent: &str, extra: &[&str]) -> Client {
        let args = self.proxy_args(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        connect_with(agent, &args, &[("FAKE_UPSTREAM_LOG", &self.log())]).await
    }

    /// The proxy, with `handler` as the agent that connects to it.
    async fn proxy_for<H: rmcp::ClientHandler>(
        &self,
        handler: H,
    ) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
        use rmcp::ServiceExt;
        let mut command = tokio::process::Command::new(crate::harness::bin());
        command
            .args(self.proxy_args(&[]))
            .env("FAKE_UPSTREAM_LOG", self.log());
        handler
            .serve(rmcp::transport::TokioChildProcess::new(command).unwrap())
            .await
            .unwrap()
    }

    /// Every entry of the ledger, as `send-once ls --json` lists them.
    pub(crate) fn entries(&self) -> Vec<Value> {
        crate::harness::entries(&self.ledger())
    }

    /// `send-once ARGS` with the ledger in place of `L`.
    pub(crate) fn cli(&self, args: &[&str]) -> std::process::Output {
        crate::harness::on_ledger(&self.ledger(), args)
    }
}

fn meta_of(result: &rmcp::model::CallToolResult) -> Value {
    result
        .meta
        .as_ref()
        .and_then(|m| m.0.get("send-once").cloned())
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_once_call_made_twice_acts_once_and_the_second_gets_the_first_result() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let args = json!({"line": "hello ana", "to": "Ana@Example.com", "request_id": "r1"});
    let first = call(&agent, "append", args.clone()).await;
    assert_eq!(ok(&first)["written"], "hello ana");
    assert_eq!(meta_of(&first)["replay"], false);
    // The same call with another volatile id: the same key.
    let again = call(
        &agent,
        "append",
        json!({"line": "hello ana", "to": "ana@example.com", "request_id": "r2"}),
    )
    .await;
    assert_eq!(ok(&again), ok(&first), "the first call's result again");
    assert_eq!(meta_of(&again)["replay"], true);
    assert_eq!(bench.acted(), ["hello ana"]);
    // A second proxy process on the same ledger: still once.
    agent.cancel().await.unwrap();
    let other = bench.proxy("other-agent", &[]).await;
    let replayed = call(&other, "append", args).await;
    assert_eq!(meta_of(&replayed)["replay"], true);
    assert_eq!(bench.acted(), ["hello ana"]);
    // The entry says what and where, for the operator.
    let key = meta_of(&first)["key"].as_str().unwrap().to_owned();
    // `send-once key` computes it from the policy and the arguments.
    let policy = bench.dir.path().join("policy.toml");
    let computed = send_once(&[
        "key",
        "--policy",
        policy.to_str().unwrap(),
        "--tool",
        "append",
        "--args",
        r#"{"to":"ANA@example.com","line":"hello ana","request_id":"r9"}"#,
    ])
    .output()
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&computed.stdout).trim(), key);
    let shown = json_stdout(&bench.cli(&["show", "L", &key, "--json"]), "show");
    let entry = shown.get("entry").unwrap_or(&shown);
    assert_eq!(entry["meta"]["tool"], "append", "{shown}");
    assert_eq!(entry["meta"]["upstream"], "fake");
    assert_eq!(entry["meta"]["to"], "Ana@Example.com");
    // And which agent made it (shift AD6).
    assert_eq!(entry["meta"]["agent"], "mailer-agent", "{shown}");
    other.cancel().await.unwrap();
}

/// A repeat under a `once` call's key whose other arguments (those the policy's `key`
/// leaves out) differ is answered with the call made, and told that it was that call,
/// not one with its arguments (hostile round, session 41: it read as its own success).
#[tokio::test(flavor = "multi_thread")]
async fn a_repeat_with_other_arguments_under_a_once_calls_key_is_told_it_was_not_made() {
    let Some(bench) = Bench::new(&keyed_by_recipient("once")) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let first = json!({"line": "pay 10", "to": "ana@example.com", "request_id": "r1"});
    assert_eq!(
        ok(&call(&agent, "append", first).await)["written"],
        "pay 10"
    );
    let other = call(
        &agent,
        "append",
        json!({"line": "pay 500", "to": "ana@example.com"}),
    )
    .await;
    assert_eq!(ok(&other)["written"], "pay 10", "the call made, again");
    assert_eq!(meta_of(&other)["replay"], true);
    assert_eq!(meta_of(&other)["differs"], true, "{}", text(&other));
    assert!(
        text(&other).contains("was not made again with these arguments"),
        "{}",
        text(&other)
    );
    // The same call again (a new request id is not the call): no word of it.
    let same = call(
        &agent,
        "append",
        json!({"line": "pay 10", "to": "ana@example.com", "request_id": "r2"}),
    )
    .await;
    assert_eq!(meta_of(&same)["replay"], true);
    assert!(meta_of(&same).get("differs").is_none(), "{}", text(&same));
    assert_eq!(bench.acted(), ["pay 10"]);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn eight_agents_making_the_same_call_at_once_make_it_once() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let bench = std::sync::Arc::new(bench);
    let mut runs = Vec::new();
    for n in 0..8 {
        let bench = std::sync::Arc::clone(&bench);
        runs.push(tokio::spawn(async move {
            let agent = bench.proxy(&format!("agent-{n}"), &[]).await;
            let args = json!({"line": "pay 10", "to": "ana@example.com", "seconds": 1});
            let answer = call(&agent, "append", args).await;
            agent.cancel().await.unwrap();
            answer
        }));
    }
    let mut made = 0;
    for run in runs {
        let answer = run.await.unwrap();
        if answer.is_error == Some(true) {
            let said = answer.structured_content.clone().unwrap_or_default();
            assert!(
                ["in_flight"].contains(&said["status"].as_str().unwrap_or_default()),
                "{}",
                text(&answer)
            );
        } else if meta_of(&answer)["replay"] == false {
            made += 1;
        }
    }
    assert_eq!(made, 1, "one agent's call was made");
    assert_eq!(bench.acted(), ["pay 10"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_past_its_limit_is_unknown_refused_again_until_a_person_settles_it() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let slow = json!({"line": "late", "to": "ana@example.com", "seconds": 5});
    let lost = call(&agent, "append", slow).await;
    let said = lost.structured_content.clone().unwrap();
    assert_eq!(said["status"], "unknown", "{}", text(&lost));
    assert!(text(&lost).contains("send-once resolve"), "{}", text(&lost));
    let key = said["key"].as_str().unwrap().to_owned();
    let quick = json!({"line": "late", "to": "ana@example.com", "seconds": 0});
    let again = call(&agent, "append", quick.clone()).await;
    assert!(
        text(&again).contains("listens for its answer"),
        "{}",
        text(&again)
    );
    assert_eq!(again.structured_content.unwrap()["status"], "unknown");
    // The operator's audit lists it with its tool, upstream and recipient.
    let audit = bench.cli(&["audit", "L", "--json"]);
    let listed: Value = serde_json::from_slice(&audit.stdout).unwrap();
    let unknown = &listed["unknown"][0];
    assert_eq!(unknown["key"], key.as_str(), "{listed}");
    assert_eq!(unknown["meta"]["tool"], "append", "{listed}");
    assert_eq!(unknown["meta"]["upstream"], "fake", "{listed}");
    assert_eq!(unknown["meta"]["to"], "ana@example.com", "{listed}");
    // It says the proxy still listens for it (hostile round, session 42: AH4).
    assert_eq!(listed["listening"], json!([key]), "{listed}");
    let said = String::from_utf8_lossy(&bench.cli(&["audit", "L"]).stdout).into_owned();
    assert!(said.contains("still listens for a late answer"), "{said}");
    // A person checked: it did not happen, and says they know better than the proxy,
    // which still listens for a late answer. The next call is made.
    let plain = bench.cli(&["resolve", "L", &key, "failed", "--by", "ops"]);
    assert_ne!(plain.status.code(), Some(0), "failed was taken unasked");
    expect_exit(
        &bench.cli(&[
            "resolve",
            "L",
            &key,
            "failed",
            "--even-if-running",
            "--by",
            "ops",
            "--note",
            "checked the outbox",
        ]),
        0,
        "resolve failed",
    );
    let made = call(&agent, "append", quick).await;
    assert_eq!(ok(&made)["written"], "late");
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_dies_mid_call_leaves_the_call_unknown() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let died = call(&agent, "die_after", json!({"line": "maybe"})).await;
    assert_eq!(
        died.structured_content.clone().unwrap()["status"],
        "unknown",
        "{}",
        text(&died)
    );
    assert_eq!(bench.acted(), ["maybe"], "it acted before it died");
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_verify_command_settles_a_lost_answer_as_made() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    // The check protocol: exit 0 with the provider's record (a JSON object) when the
    // call happened, 1 when it did not.
    let verify = bench.dir.path().join("verify.sh");
    std::fs::write(
        &verify,
        "grep -qx maybe \"$FAKE_UPSTREAM_LOG\" && echo '{\"line\":\"maybe\"}' || exit 1\n",
    )
    .unwrap();
    let policy = POLICY.replace(
        "[tools.die_after]\nmode = \"once\"\n",
        &format!(
            "[tools.die_after]\nmode = \"once\"\nverify = \"sh {}\"\n",
            verify.display()
        ),
    );
    std::fs::write(bench.dir.path().join("policy.toml"), policy).unwrap();
    let agent = bench.proxy("mailer-agent", &[]).await;
    let made = call(&agent, "die_after", json!({"line": "maybe"})).await;
    assert!(
        text(&made).contains("found that it happened"),
        "{}",
        text(&made)
    );
    assert_eq!(meta_of(&made)["status"], "sent");
    assert_eq!(bench.acted(), ["maybe"]);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_a_person_settled_as_sent_is_said_to_be_made_without_a_result() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let died = call(&agent, "die_after", json!({"line": "gone"})).await;
    let key = died.structured_content.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    agent.cancel().await.unwrap();
    expect_exit(
        &bench.cli(&[
            "resolve",
            "L",
            &key,
            "sent",
            "--by",
            "ops",
            "--note",
            "in the log",
        ]),
        0,
        "resolve sent",
    );
    let agent = bench.proxy("mailer-agent", &[]).await;
    let again = call(&agent, "die_after", json!({"line": "gone"})).await;
    // No result to give a tool with an output schema: an error whose words say it WAS
    // made (a success without structured content is refused by clients).
    assert!(
        refused(&again).contains("WAS already made"),
        "{}",
        text(&again)
    );
    assert_eq!(meta_of(&again)["replay"], true);
    assert_eq!(bench.acted(), ["gone"]);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_is_error_answer_is_unknown_unless_the_policy_says_it_means_failed() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let error = call(&agent, "refuse", json!({"line": "x"})).await;
    assert!(
        refused(&error).contains("refused to write x"),
        "the tool's words"
    );
    assert!(
        text(&error).contains("recorded as unknown"),
        "{}",
        text(&error)
    );
    assert_eq!(meta_of(&error)["status"], "pending");
    let again = call(&agent, "refuse", json!({"line": "x"})).await;
    assert_eq!(again.structured_content.unwrap()["status"], "unknown");
    agent.cancel().await.unwrap();

    let failed = Bench::new(&POLICY.replace(
        "[tools.refuse]\nmode = \"once\"\n",
        "[tools.refuse]\nmode = \"once\"\nerror = \"failed\"\n",
    ))
    .unwrap();
    let agent = failed.proxy("mailer-agent", &[]).await;
    for attempt in 1..=2 {
        let error = call(&agent, "refuse", json!({"line": "x"})).await;
        assert!(refused(&error).contains("refused to write x"));
        assert_eq!(meta_of(&error)["status"], "failed", "attempt {attempt}");
    }
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_the_upstream_refused_before_it_ran_is_failed_and_may_be_made_again() {
    let Some(bench) = Bench::new(&POLICY.replace("mode = \"hold\"", "mode = \"once\"")) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    for _ in 0..2 {
        let answer = agent
            .call_tool(
                rmcp::model::CallToolRequestParams::new("no_such_tool")
                    .with_arguments(json!({"line": "x"}).as_object().unwrap().clone()),
            )
            .await;
        let said = answer
            .expect_err("the upstream's own error, relayed")
            .to_string();
        assert!(said.contains("tool not found"), "{said}");
    }
    let listed = bench.entries();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status"], "failed", "{listed:?}");
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_gives_up_does_not_stop_the_call_and_its_retry_gets_the_result() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let args = json!({"line": "slow", "to": "ana@example.com", "seconds": 1.0});
    let params = rmcp::model::CallToolRequestParams::new("append")
        .with_arguments(args.as_object().unwrap().clone());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = agent
        .peer()
        .send_request_with_option(
            request,
            PeerRequestOptions::with_timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap();
    assert!(handle.await_response().await.is_err(), "the agent gave up");
    // The call is made anyway, and its answer recorded (the line comes first).
    wait_until(
        "the call is made and recorded",
        Duration::from_secs(10),
        || {
            bench.acted() == ["slow"]
                && String::from_utf8_lossy(&bench.cli(&["ls", "L", "--json"]).stdout)
                    .contains("\"sent\"")
        },
    );
    let replay = call(&agent, "append", args).await;
    assert_eq!(ok(&replay)["written"], "slow");
    assert_eq!(meta_of(&replay)["replay"], true);
    assert_eq!(bench.acted(), ["slow"]);
    agent.cancel().await.unwrap();
}

#[derive(Clone, Default)]
struct Listener(std::sync::Arc<std::sync::Mutex<Vec<f64>>>);

impl rmcp::ClientHandler for Listener {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.progress);
    }
}

// One thread for the agent: rmcp hands each notification to a task of its own, and on
// several threads two of them could record their progress in the other order, which
// would be the test's reordering, not the proxy's.
#[tokio::test(flavor = "current_thread")]
async fn the_upstreams_progress_reaches_the_agent_through_the_proxy() {
    use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let listener = Listener::default();
    let agent = bench.proxy_for(listener.clone()).await;
    // The tool works a moment after its progress, as a real one does: a client drops
    // progress that comes after the request's answer (the spec lets it), and the
    // proxy relays notifications as they are handled, not in one line with answers.
    let mut params = rmcp::model::CallToolRequestParams::new("append_with_progress")
        .with_arguments(
            json!({"line": "p", "seconds": 0.5})
                .as_object()
                .unwrap()
                .clone(),
        );
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::String("tok-1".into()),
    )));
    let result = agent.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    // Relayed in order, under one lock with the check: a notification overtaken by a
    // later one is dropped, never relayed after it (progress only increases). The wait
    // yields, so that this thread goes on taking the agent's notifications.
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while listener.0.lock().unwrap().last() != Some(&3.0) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let seen = listener.0.lock().unwrap().clone();
    assert!(
        waited.is_ok(),
        "the last progress did not come back: {seen:?}"
    );
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_hint_lets_an_unnamed_tool_pass_only_when_trusted() {
    let Some(bench) = Bench::new("upstream = \"fake\"\n[default]\nmode = \"hold\"\n") else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let held = call(&agent, "echo", json!({"line": "hi"})).await;
    assert_eq!(held.structured_content.unwrap()["status"], "held");
    agent.cancel().await.unwrap();
    let trusting = bench.proxy("mailer-agent", &["--trust-annotations"]).await;
    let passed = call(&trusting, "echo", json!({"line": "hi"})).await;
    assert_eq!(text(&passed), "hi");
    trusting.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pass_tool_is_forwarded_every_time_and_progress_comes_back() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    call(
        &agent,
        "append",
        json!({"line": "one", "to": "a@example.com"}),
    )
    .await;
    for _ in 0..2 {
        let read = call(&agent, "read_log", json!({})).await;
        assert!(text(&read).contains("one"), "{}", text(&read));
    }
    let tools = crate::harness::mcp::tool_names(&agent).await;
    assert!(tools.contains(&"send_once_status".to_owned()), "{tools:?}");
    assert!(tools.contains(&"append".to_owned()));
    agent.cancel().await.unwrap();
}

fn proxy_pid(ledger: &Path) -> Option<u32> {
    let needle = format!("mcp\0proxy\0{}\0", ledger.display());
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|d| {
        let pid: u32 = d.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(d.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmdline)
            .contains(&needle)
            .then_some(pid)
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_killed_mid_call_leaves_the_call_pending_never_lost() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let pid = proxy_pid(&bench.ledger()).expect("the proxy's process");
    let slow = tokio::spawn(async move {
        let args = json!({"line": "cut", "to": "ana@example.com", "seconds": 1.5});
        let _ = agent
            .call_tool(
                rmcp::model::CallToolRequestParams::new("append")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await;
    });
    wait_until("the call is claimed", Duration::from_secs(10), || {
        let audit = bench.cli(&["ls", "L", "--json"]);
        String::from_utf8_lossy(&audit.stdout).contains("pending")
    });
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let _ = slow.await;
    // The claim stays, pending. Within the proxy's limit the call may still be under
    // way at the upstream: `audit` says it is still running, not yet an unknown send
    // for a person to settle.
    let entries = bench.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["status"], "pending", "{entries:?}");
    assert_eq!(entries[0]["meta"]["tool"], "append", "{entries:?}");
    let audit = bench.cli(&["audit", "L", "--json"]);
    let listed: Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(
        listed["stillRunning"],
        json!([entries[0]["key"]]),
        "the claim stays, still running: {listed}"
    );
}

/// A kill -9 of the proxy drops nothing, so its upstream lives on, and may still make
/// the call it was given: past the proxy's limit, the call counts as running while it
/// does, and a plain `failed` waits for the person to say they know better (hostile
/// round, session 43: AI1, the orphan made the call after it was marked failed, and
/// the agent's retry through a new proxy made it again).
#[test]
fn a_call_whose_upstream_outlives_a_killed_proxy_counts_as_running_while_it_does() {
    let Some(bench) = Bench::new(&POLICY.replace("timeout = \"2s\"", "timeout = \"1s\"")) else {
        return;
    };
    let mut raw = crate::harness::mcp::Raw::spawn(
        &bench.proxy_args(&[]),
        &[("FAKE_UPSTREAM_LOG", &bench.log())],
        std::process::Stdio::null(),
    );
    raw.call(
        1,
        "append",
        json!({"line": "pay", "to": "ana@example.com", "seconds": 4.0}),
    );
    wait_until("the call is claimed", Duration::from_secs(10), || {
        bench.entries().len() == 1
    });
    raw.signal(libc::SIGKILL);
    assert!(raw.exited_within(Duration::from_secs(5)));
    // Past the proxy's limit, with the upstream still at work.
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(
        bench.acted().is_empty(),
        "not made yet: {:?}",
        bench.acted()
    );
    let key = bench.entries()[0]["key"].as_str().unwrap().to_owned();
    let shown: Value =
        serde_json::from_slice(&bench.cli(&["show", "L", &key, "--json"]).stdout).unwrap();
    assert_eq!(shown["running"]["mayStillRun"], true, "{shown}");
    let plain = bench.cli(&["resolve", "L", &key, "failed", "--by", "dana"]);
    assert_ne!(plain.status.code(), Some(0), "a plain failed was taken");
    let refused = String::from_utf8_lossy(&plain.stderr);
    assert!(refused.contains("still running on this host"), "{refused}");
    // The refusal is the one story told: no warning before it promises a record.
    assert!(!refused.contains("warning:"), "{refused}");
    // A person who knows better is told that nothing is left to record a completion
    // (hostile round 44: AL1, "it is recorded as sent whatever is decided now").
    let forced = bench.cli(&[
        "resolve",
        "L",
        &key,
        "failed",
        "--by",
        "dana",
        "--even-if-running",
        "--older-than",
        "1h",
    ]);
    expect_exit(&forced, 0, "resolve failed --even-if-running");
    let warned = String::from_utf8_lossy(&forced.stderr);
    assert!(
        warned.contains("has ended: if it completes, nothing is left to record it")
            && warned.contains("a next attempt would send it again")
            && !warned.contains("recorded as sent whatever"),
        "{warned}"
    );
    // The upstream makes it, and ends: then it is an unknown send for a person.
    wait_until(
        "the upstream acts and ends",
        Duration::from_secs(15),
        || {
            bench.acted() == ["pay"]
                && serde_json::from_slice::<Value>(
                    &bench.cli(&["show", "L", &key, "--json"]).stdout,
                )
                .is_ok_and(|shown| shown["running"]["mayStillRun"] != true)
        },
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_call_is_made_once_approved_with_the_arguments_the_person_approved() {
    let Some(bench) = Bench::new(HOLD) else {
        return;
    };
    let agent = bench.proxy("billing-agent", &[]).await;
    let args = json!({"line": "pay 10", "to": "ana@example.com"});
    let held = call(&agent, "append", args.clone()).await;
    let said = held.structured_content.clone().unwrap();
    assert_eq!(said["status"], "held", "{}", text(&held));
    assert!(text(&held).contains("NOT made"));
    assert_eq!(said["draftId"], 1);
    assert!(bench.acted().is_empty());
    // Asking again is the same draft, still held.
    let again = call(&agent, "append", args.clone()).await;
    assert_eq!(again.structured_content.unwrap()["draftId"], 1);

    // A reviewer edits it and another approves the edit.
    let edited = bench.dir.path().join("edited.json");
    // The reviewer also corrects who it goes to.
    std::fs::write(&edited, r#"{"line":"pay 12","to":"carol@example.com"}"#).unwrap();
    expect_exit(
        &bench.cli(&[
            "draft",
            "edit",
            "L",
            "1",
            "--payload",
            edited.to_str().unwrap(),
            "--seen-revision",
            "1",
            "--by",
            "dana",
        ]),
        0,
        "draft edit",
    );
    // The one who approves next reads the recipient of the edit in the queue's rows,
    // not the one the agent asked for (shift AD1).
    let listed = bench.cli(&["approvals", "L"]);
    let rows = String::from_utf8_lossy(&listed.stdout);
    assert!(
        rows.contains("carol@example.com") && !rows.contains("ana@example.com"),
        "{rows}"
    );
    let queued = json_stdout(&bench.cli(&["approvals", "L", "--json"]), "approvals");
    assert_eq!(queued[0]["meta"]["to"], "carol@example.com", "{queued}");
    // The log keeps who the agent asked for, and what the edit changed of it.
    let log = json_stdout(&bench.cli(&["decisions", "L", "--json"]), "decisions");
    let of = |action: &str| {
        log.as_array()
            .unwrap()
            .iter()
            .find(|d| d["action"] == action)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(of("submit")["detail"]["to"], "ana@example.com", "{log}");
    assert_eq!(of("edit")["detail"]["to"], "ana@example.com", "{log}");
    assert_eq!(
        of("edit")["detail"]["toAfter"],
        "carol@example.com",
        "{log}"
    );
    // The call the key was made from is said to be that, not what will be sent; the
    // queue's own fields are not shown (shift, session 41).
    let shown =
        String::from_utf8_lossy(&bench.cli(&["draft", "show", "L", "1"]).stdout).into_owned();
    assert!(
        shown.contains("key made from call: ") && !shown.contains("toArgument"),
        "{shown}"
    );
    assert_eq!(queued[0]["meta"]["intent"], "append", "{queued}");
    let approved = bench.cli(&["approve", "L", "1", "--revision", "2", "--by", "erin"]);
    expect_exit(&approved, 0, "approve");
    // The approver is told who makes it: not `send-once dispatch`, which refuses it.
    let told = String::from_utf8_lossy(&approved.stderr);
    assert!(told.contains("held by send-once mcp proxy"), "{told}");
    // Only the proxy makes it.
    let dispatch = bench.cli(&["dispatch", "L", "1", "--", "true"]);
    expect_exit(&dispatch, 2, "dispatch of a held call");
    assert!(String::from_utf8_lossy(&dispatch.stderr).contains("send-once mcp proxy"));

    // Nor does send-once mcp's dispatch_draft, whatever send command it was given.
    let other = crate::harness::mcp::connect(
        "another-agent",
        &[
            "mcp",
            bench.ledger().to_str().unwrap(),
            "--send",
            "mcp:fake=true",
        ],
    )
    .await;
    let not_here = refused(&call(&other, "dispatch_draft", json!({"draftId": 1})).await);
    assert!(
        not_here.contains("held by send-once mcp proxy"),
        "{not_here}"
    );
    other.cancel().await.unwrap();

    let made = call(&agent, "send_once_status", json!({"draftId": 1})).await;
    assert_eq!(
        ok(&made)["written"],
        "pay 12",
        "the approved arguments went upstream"
    );
    // The agent is told that what went was the reviewer's, not what it asked (shift
    // AD3), in words and in `_meta`, and again when it repeats its call.
    let repeat = call(&agent, "append", args).await;
    assert_eq!(ok(&repeat)["written"], "pay 12");
    assert_eq!(meta_of(&repeat)["replay"], true);
    for answer in [&made, &repeat] {
        let said = text(answer);
        assert!(
            said.contains("a reviewer (dana) changed this call's arguments")
                && said.contains("changed: line, to"),
            "{said}"
        );
        assert_eq!(meta_of(answer)["editedBy"], "dana");
        assert_eq!(meta_of(answer)["editedFields"], json!(["line", "to"]));
    }
    assert_eq!(bench.acted(), ["pay 12"]);
    // The entry names the recipient approved, whom an operator would check.
    let key = meta_of(&made)["key"].as_str().unwrap().to_owned();
    let shown = json_stdout(&bench.cli(&["show", "L", &key, "--json"]), "show");
    let entry = shown.get("entry").unwrap_or(&shown);
    assert_eq!(entry["meta"]["to"], "carol@example.com", "{shown}");
    // Once made, `dispatch` says the proxy made it, not that only the proxy will.
    let after = bench.cli(&["dispatch", "L", "1", "--", "true"]);
    expect_exit(&after, 2, "dispatch of a held call the proxy made");
    let said = String::from_utf8_lossy(&after.stderr);
    assert!(
        said.contains("the proxy made it at ") && said.contains("It is not made again"),
        "{said}"
    );
    assert_eq!(bench.acted(), ["pay 12"]);
    agent.cancel().await.unwrap();
}

/// A call the policy keys by its recipient alone, held: a repeat to the same recipient
/// with other arguments is the held call by its key, but not the call the agent first
/// made. It is neither queued nor made for those arguments, and the agent is told which
/// differ (shift AD4: it was told "still held", and its arguments were dropped unsaid).
#[tokio::test(flavor = "multi_thread")]
async fn a_repeat_with_other_arguments_under_a_held_calls_key_is_neither_queued_nor_made() {
    let Some(bench) = Bench::new(&keyed_by_recipient("hold")) else {
        return;
    };
    let agent = bench.proxy("billing-agent", &[]).await;
    let first = json!({"line": "pay 10", "to": "ana@example.com", "request_id": "r1"});
    let held = call(&agent, "append", first.clone()).await;
    assert_eq!(held.structured_content.unwrap()["draftId"], 1);
    // The recipient spelled in another case is the same call, as the key reads it.
    let respelled = call(
        &agent,
        "append",
        json!({"line": "pay 10", "to": "ANA@Example.com"}),
    )
    .await;
    let told = respelled.structured_content.unwrap();
    assert_eq!(told["draftId"], 1, "{told}");
    assert!(told.get("differs").is_none(), "{told}");
    let other = json!({"line": "pay 500", "to": "ana@example.com", "request_id": "r2"});
    let answer = call(&agent, "append", other.clone()).await;
    assert_eq!(answer.is_error, Some(true));
    let said = text(&answer);
    assert!(
        said.contains("NOT made") && said.contains("NOT queued") && said.contains("in: line"),
        "{said}"
    );
    let told = answer.structured_content.unwrap();
    assert_eq!(told["draftId"], 1);
    assert_eq!(
        told["differs"],
        json!(["line"]),
        "the request id is not the call"
    );
    // The draft is the first call's, one revision.
    let queued = json_stdout(&bench.cli(&["approvals", "L", "--json"]), "approvals");
    assert_eq!(queued.as_array().unwrap().len(), 1, "{queued}");
    assert_eq!(queued[0]["revision"], 1, "{queued}");
    expect_exit(
        &bench.cli(&["approve", "L", "1", "--by", "erin"]),
        0,
        "approve",
    );
    // Approved, the other call is still not made for those arguments.
    let answer = call(&agent, "append", other).await;
    assert!(text(&answer).contains("NOT made"), "{}", text(&answer));
    assert!(bench.acted().is_empty());
    // The agent's own call again, its request id changed, is the held call: made.
    let again = json!({"line": "pay 10", "to": "ana@example.com", "request_id": "r3"});
    let made = call(&agent, "append", again).await;
    assert_eq!(ok(&made)["written"], "pay 10");
    assert_eq!(bench.acted(), ["pay 10"]);
    // A null argument is as absent, as the key reads it: the same call, made already.
    let with_null = json!({"line": "pay 10", "to": "ana@example.com", "memo": null});
    let replayed = call(&agent, "append", with_null).await;
    assert_eq!(ok(&replayed)["written"], "pay 10", "{}", text(&replayed));
    assert_eq!(bench.acted(), ["pay 10"]);
    agent.cancel().await.unwrap();
}

/// A held call's submitter is the name the session started with: a request's `_meta`
/// naming another client does not change it, and a second `initialize` is refused
/// (hostile AC5, at the proxy's door).
#[test]
fn a_held_calls_submitter_is_the_name_the_session_started_with() {
    let Some(bench) = Bench::new(HOLD) else {
        return;
    };
    let mut raw = crate::harness::mcp::Raw::start(&bench, &[]);
    let within = std::time::Duration::from_secs(20);
    raw.initialize_as(1, "dana");
    let again = raw
        .next(within)
        .expect("an answer to the second initialize");
    assert_eq!(again["error"]["code"], -32600, "{again}");
    raw.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "append", "arguments": {"line": "pay 10", "to": "ana@example.com"},
        "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "erin", "version": "1"}}}}),
    );
    let held = raw.next(within).expect("the held answer");
    assert_eq!(
        held["result"]["structuredContent"]["status"], "held",
        "{held}"
    );
    let queued = json_stdout(&bench.cli(&["approvals", "L", "--json"]), "approvals");
    assert_eq!(queued[0]["submittedBy"], "raw-agent", "{queued}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_marked_as_a_held_call_but_not_made_by_the_proxy_is_never_made() {
    let Some(bench) = Bench::new(HOLD) else {
        return;
    };
    let ledger = bench.ledger();
    let payload = bench.dir.path().join("p.json");
    std::fs::write(&payload, r#"{"line":"PWNED","to":"mallory@example.com"}"#).unwrap();
    let forged = send_once(&[
        "draft",
        "submit",
        ledger.to_str().unwrap(),
        "--key",
        "looks-held",
        "--payload",
        payload.to_str().unwrap(),
        "--meta",
        r#"{"heldBy":"send-once mcp proxy","upstream":"fake","tool":"append","channel":"mcp:fake"}"#,
        "--by",
        "mallory",
    ])
    .output()
    .unwrap();
    expect_exit(&forged, 0, "draft submit");
    expect_exit(
        &bench.cli(&["approve", "L", "1", "--by", "rita"]),
        0,
        "approve",
    );
    let agent = bench.proxy("other-agent", &[]).await;
    let refused_forged = call(&agent, "send_once_status", json!({"draftId": 1})).await;
    assert!(
        refused(&refused_forged).contains("not a call held by this proxy"),
        "{}",
        text(&refused_forged)
    );
    assert!(bench.acted().is_empty());
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_policy_leaves_out_or_a_null_is_not_part_of_the_key() {
    // The fake's schema does not forbid other arguments, so it may use them: a nonce
    // makes another call unless the policy names the arguments that make the key.
    let Some(bench) = Bench::new(&POLICY.replace(
        "exclude = [\"request_id\", \"seconds\"]",
        "key = [\"line\", \"to\"]",
    )) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    call(
        &agent,
        "append",
        json!({"line": "x", "to": "bob@example.com"}),
    )
    .await;
    for extra in [json!({"nonce": "1"}), json!({"cc": null})] {
        let mut args = json!({"line": "x", "to": "bob@example.com"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let again = call(&agent, "append", args).await;
        assert_eq!(meta_of(&again)["replay"], true, "{}", text(&again));
    }
    assert_eq!(bench.acted(), ["x"]);
    // Arguments the tool cannot take are refused before anything is claimed.
    let missing = call(&agent, "append", json!({"to": "bob@example.com"})).await;
    assert!(
        refused(&missing).contains("`line` is required"),
        "{}",
        text(&missing)
    );
    let wrong = call(
        &agent,
        "append",
        json!({"line": 5, "to": "bob@example.com"}),
    )
    .await;
    assert!(refused(&wrong).contains("takes string"), "{}", text(&wrong));
    assert_eq!(
        bench.entries().len(),
        1,
        "nothing claimed for the refused calls"
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminated_proxy_lets_its_call_finish_and_an_exited_upstream_stops_the_proxy() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let pid = proxy_pid(&bench.ledger()).expect("the proxy's process");
    // Longer than rmcp gives a stopped session's answers (2 s): the proxy lets the
    // session end by itself once the call is answered.
    let slow = tokio::spawn(async move {
        let args = json!({"line": "term", "seconds": 3.0});
        agent
            .call_tool(
                rmcp::model::CallToolRequestParams::new("append_with_progress")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
    });
    wait_until("the call is claimed", Duration::from_secs(10), || {
        String::from_utf8_lossy(&bench.cli(&["ls", "L", "--json"]).stdout).contains("pending")
    });
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let answered = slow
        .await
        .unwrap()
        .expect("the call in flight is answered, not cut off");
    assert_eq!(
        answered
            .structured_content
            .as_ref()
            .map(|s| s["written"].clone()),
        Some(json!("term")),
        "{answered:?}"
    );
    crate::harness::wait_ended("the proxy", pid, Duration::from_secs(20));
    let listed = json_stdout(&bench.cli(&["ls", "L", "--json"]), "ls");
    assert!(
        listed.to_string().contains("\"sent\""),
        "recorded, not left unknown: {listed}"
    );
    assert_eq!(bench.acted(), ["term"]);

    // The upstream dies: the proxy stops, and no later call is claimed as unknown.
    let agent = bench.proxy("mailer-agent", &[]).await;
    let pid = proxy_pid(&bench.ledger()).expect("the proxy's process");
    let died = call(&agent, "die_after", json!({"line": "d"})).await;
    assert_eq!(died.structured_content.unwrap()["status"], "unknown");
    crate::harness::wait_ended("the proxy after its upstream", pid, Duration::from_secs(20));
    let audit = bench.cli(&["audit", "L", "--json"]);
    let audit: Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(
        audit["unknown"].as_array().map(Vec::len),
        Some(1),
        "{audit}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_call_that_failed_after_its_approval_ran_out_is_held_again() {
    let Some(bench) = Bench::new(&format!("{HOLD}[tools.die_before]\nmode = \"hold\"\n")) else {
        return;
    };
    let agent = bench.proxy("billing-agent", &[]).await;
    let args = json!({"line": "retry me"});
    let held = call(&agent, "die_before", args.clone()).await;
    assert_eq!(held.structured_content.unwrap()["draftId"], 1);
    expect_exit(
        &bench.cli(&["approve", "L", "1", "--by", "rita", "--ttl", "2s"]),
        0,
        "approve",
    );
    let lost = call(&agent, "send_once_status", json!({"draftId": 1})).await;
    let key = lost.structured_content.clone().unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(lost.structured_content.unwrap()["status"], "unknown");
    expect_exit(
        &bench.cli(&[
            "resolve",
            "L",
            &key,
            "failed",
            "--by",
            "ops",
            "--note",
            "not in the outbox",
        ]),
        0,
        "resolve failed",
    );
    // Its approval runs out.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // The upstream died with the call, and the proxy with it: the agent starts another.
    let agent = bench.proxy("billing-agent", &[]).await;
    let again = call(&agent, "die_before", args).await;
    let said = again.structured_content.unwrap();
    assert_eq!(said["status"], "held", "{said}");
    assert_eq!(
        said["draftId"], 2,
        "a new draft for a person to approve again"
    );
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_held_call_says_why_and_two_of_two_hold_until_both_approve() {
    let Some(bench) = Bench::new(HOLD) else {
        return;
    };
    let agent = bench.proxy("billing-agent", &[]).await;
    call(
        &agent,
        "append",
        json!({"line": "wire 500", "to": "bob@example.com"}),
    )
    .await;
    expect_exit(
        &bench.cli(&[
            "reject",
            "L",
            "1",
            "--by",
            "dana",
            "--reason",
            "not this month",
        ]),
        0,
        "reject",
    );
    let no = call(&agent, "send_once_status", json!({"draftId": 1})).await;
    assert!(refused(&no).contains("not this month"), "{}", text(&no));
    // Read without parsing the sentence, as every other answer of the status tool.
    let said = no.structured_content.clone().unwrap_or_default();
    assert_eq!(said["status"], "rejected", "{said}");
    assert_eq!(said["reason"], "not this month", "{said}");
    assert_eq!(said["by"], "dana", "{said}");

    expect_exit(
        &bench.cli(&[
            "policy",
            "L",
            "--approvals",
            "2",
            "--channel",
            "mcp:fake",
            "--by",
            "ops",
        ]),
        0,
        "policy",
    );
    let held = call(
        &agent,
        "append",
        json!({"line": "wire 200", "to": "bob@example.com"}),
    )
    .await;
    let id = held.structured_content.unwrap()["draftId"]
        .as_i64()
        .unwrap();
    let id = id.to_string();
    expect_exit(
        &bench.cli(&["approve", "L", &id, "--by", "erin"]),
        0,
        "first approval",
    );
    let one = call(
        &agent,
        "send_once_status",
        json!({"draftId": id.parse::<i64>().unwrap()}),
    )
    .await;
    assert!(refused(&one).contains("1 of 2"), "{}", text(&one));
    assert!(bench.acted().is_empty());
    expect_exit(
        &bench.cli(&["approve", "L", &id, "--by", "frank"]),
        0,
        "second approval",
    );
    let made = call(
        &agent,
        "send_once_status",
        json!({"draftId": id.parse::<i64>().unwrap()}),
    )
    .await;
    assert_eq!(ok(&made)["written"], "wire 200");
    assert_eq!(bench.acted(), ["wire 200"]);
    agent.cancel().await.unwrap();
}

#[test]
fn a_bad_policy_or_a_clashing_status_tool_is_refused_at_start() {
    let Some(bench) = Bench::new("upstream = \"fake\"\n") else {
        return;
    };
    let policy = bench.dir.path().join("policy.toml");
    let fake = bench.fake.to_str().unwrap();
    let out = bench.run_proxy(&bench.ledger(), &[], &[fake]);
    expect_exit(&out, 2, "a policy without [default]");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no [default]"));

    std::fs::write(&policy, POLICY).unwrap();
    let out = bench.run_proxy(&bench.ledger(), &["--status-tool", "append"], &[fake]);
    expect_exit(&out, 2, "a status tool named like an upstream tool");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--status-tool"));
    // Refused once the upstream is up, before the ledger is created.
    assert!(!bench.ledger().exists(), "a refusal creates no ledger");

    let missing = bench.dir.path().join("no-such-server");
    let out = bench.run_proxy(&bench.ledger(), &[], &[missing.to_str().unwrap()]);
    expect_exit(&out, 2, "an upstream that does not start");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start the upstream"), "{err}");
    assert!(!bench.ledger().exists(), "a refusal creates no ledger");

    // A program that runs but never answers initialize is refused at the bound.
    let began = std::time::Instant::now();
    let out = bench.run_proxy(
        &bench.ledger(),
        &["--start-timeout", "1s"],
        &["sleep", "600"],
    );
    expect_exit(&out, 2, "an upstream that never answers initialize");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("did not start an MCP session within 1s") && err.contains("--start-timeout"),
        "{err}"
    );
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    assert!(!bench.ledger().exists(), "a refusal creates no ledger");
    let out = bench.run_proxy(&bench.ledger(), &["--start-timeout", "soon"], &[fake]);
    expect_exit(&out, 2, "a start timeout that is not a duration");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--start-timeout"));

    for (flag, expected) in [
        ("", "is not a tool name"),
        ("send\u{1b}[2J", "is not a tool name"),
    ] {
        let out = bench.run_proxy(&bench.ledger(), &["--status-tool", flag], &[fake]);
        expect_exit(&out, 2, "a status tool that is no tool name");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected) && !err.contains('\u{1b}'), "{err}");
    }
    std::fs::write(
        &policy,
        format!("{POLICY}[tools.send_once_status]\nmode = \"pass\"\n"),
    )
    .unwrap();
    let out = bench.run_proxy(&bench.ledger(), &[], &[fake]);
    expect_exit(&out, 2, "a rule for the status tool");
    assert!(String::from_utf8_lossy(&out.stderr).contains("never applies"));
    std::fs::write(&policy, POLICY).unwrap();

    let jsonl = bench.dir.path().join("l.jsonl");
    let out = bench.run_proxy(&jsonl, &[], &[fake]);
    expect_exit(&out, 2, "a policy that holds on JSON Lines");
    assert!(String::from_utf8_lossy(&out.stderr).contains("review queue"));
}

/// What an upstream says on its standard error passes through the proxy, after its
/// name and made visible; when it cannot start, why comes before the refusal.
#[test]
fn an_upstream_that_cannot_start_is_heard_first_and_its_words_made_visible() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let out = bench.run_proxy(
        &bench.ledger(),
        &[],
        &[
            "sh",
            "-c",
            "printf 'GMAIL_TOKEN is not set \\033]0;owned\\007\\n' >&2; exit 3",
        ],
    );
    expect_exit(&out, 2, "an upstream that exits at once");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0], "fake: GMAIL_TOKEN is not set ␛]0;owned␇");
    assert!(
        lines[1].starts_with("send-once: the upstream sh did not start an MCP session"),
        "{err}"
    );
    assert!(!bench.ledger().exists(), "a refusal creates no ledger");
}

/// What the upstream started ends with the proxy: its process group is killed once
/// the upstream had its second to end (review of session 35, S6: a grandchild was
/// left running).
#[test]
fn what_the_upstream_started_ends_with_the_proxy() {
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let pid_file = bench.dir.path().join("sleeper.pid");
    let started = format!(
        "sleep 300 & echo $! > {}; exec {}",
        pid_file.display(),
        bench.fake.display()
    );
    let out = bench.run_proxy(&bench.ledger(), &[], &["sh", "-c", &started]);
    expect_exit(&out, 2, "a session no agent started");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        crate::harness::ended_within(pid, Duration::from_secs(5)),
        "the upstream's own child still runs"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_upstreams_resources_and_prompts_reach_the_agent_as_they_are() {
    use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let agent = bench.proxy("reader-agent", &[]).await;
    let offered = agent.peer_info().expect("the proxy's initialize answer");
    assert!(offered.capabilities.resources.is_some(), "{offered:?}");
    assert!(offered.capabilities.prompts.is_some(), "{offered:?}");
    // Something for the resource to show: a call the ledger gates.
    ok(&call(
        &agent,
        "append",
        json!({"line": "for the log", "to": "ana@example.com"}),
    )
    .await);

    let resources = agent.list_all_resources().await.unwrap();
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0].uri, "log://acted");
    let read = agent
        .read_resource(ReadResourceRequestParams::new("log://acted"))
        .await
        .unwrap();
    let shown = serde_json::to_string(&read).unwrap();
    assert!(shown.contains("for the log"), "{shown}");
    // The upstream's own error comes back as it said it.
    let missing = agent
        .read_resource(ReadResourceRequestParams::new("log://other"))
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("no resource log://other"), "{missing}");

    let prompts = agent.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0].name, "summarise");
    let mut arguments = serde_json::Map::new();
    arguments.insert("topic".into(), json!("the outbox"));
    let prompt = agent
        .get_prompt(GetPromptRequestParams::new("summarise").with_arguments(arguments))
        .await
        .unwrap();
    let shown = serde_json::to_string(&prompt).unwrap();
    assert!(shown.contains("Summarise the outbox."), "{shown}");
    // Reading and prompting act on nothing: the one line is the gated call's.
    assert_eq!(bench.acted(), ["for the log"]);
    agent.cancel().await.unwrap();
}

/// An agent that keeps what the upstream tells it through the proxy, unasked.
#[derive(Clone, Default)]
struct Watcher(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

#[allow(deprecated)]
impl rmcp::ClientHandler for Watcher {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(format!("updated {}", params.uri));
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(format!("log {}", params.data));
    }
}

// Subscriptions and logging are MCP 2025-11-25's, what agents negotiate today; rmcp
// marks them deprecated for later versions (SEP-2577).
#[allow(deprecated)]
#[tokio::test(flavor = "current_thread")]
async fn subscriptions_completions_and_logging_go_through_the_proxy() {
    use rmcp::model::{
        ArgumentInfo, CompleteRequestParams, LoggingLevel, Reference, SetLevelRequestParams,
        SubscribeRequestParams,
    };
    let Some(bench) = Bench::new(POLICY) else {
        return;
    };
    let watcher = Watcher::default();
    let agent = bench.proxy_for(watcher.clone()).await;
    let offered = agent.peer_info().expect("the proxy's initialize answer");
    assert!(offered.capabilities.completions.is_some(), "{offered:?}");
    assert!(offered.capabilities.logging.is_some(), "{offered:?}");

    let completed = agent
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("summarise"),
            ArgumentInfo::new("topic", "the o"),
        ))
        .await
        .unwrap();
    assert_eq!(completed.completion.values, ["the outbox"]);

    agent
        .subscribe(SubscribeRequestParams::new("log://acted"))
        .await
        .unwrap();
    agent
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    let refused = agent
        .subscribe(SubscribeRequestParams::new("log://other"))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("no resource log://other"), "{refused}");

    // A call the ledger gates: the upstream says what it did, and that its log changed.
    let arguments = json!({"line": "watched", "to": "ana@example.com"});
    let made = agent
        .call_tool(
            rmcp::model::CallToolRequestParams::new("append")
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    ok(&made);
    let told = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let told = watcher.0.lock().unwrap().clone();
            if told.len() >= 2 {
                return told;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| watcher.0.lock().unwrap().clone());
    assert!(
        told.contains(&"log \"appended watched\"".to_owned()),
        "{told:?}"
    );
    assert!(told.contains(&"updated log://acted".to_owned()), "{told:?}");
    agent.cancel().await.unwrap();
}

/// Every tool of tests/fixtures/mcp/not_final_upstream.py, held to `once`.
const NOT_FINAL: &str = r#"
upstream = "not-final"
[default]
mode = "once"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_that_is_not_final_is_never_kept_as_the_calls_result() {
    if !crate::harness::skip::have_tools(&[("python3", "python3")]) {
        return;
    }
    let Some(bench) = Bench::new(NOT_FINAL) else {
        return;
    };
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp/not_final_upstream.py"
    );
    // A limit short enough that a call the proxy never hears the end of comes back.
    let args = bench.proxy_args_on(&bench.ledger(), &["--timeout", "10s"], &["python3", script]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let agent = connect_with("tasks-agent", &args, &[("FAKE_UPSTREAM_LOG", &bench.log())]).await;
    for (tool, why) in [
        ("start_task", "answered with a task"),
        ("needs_input", "asked for more input"),
        // rmcp takes neither for a tool's result, and nor does the proxy.
        ("old_task", "something else than a result"),
        ("old_task_with_content", "something else than a result"),
        ("new_kind", "something else than a result"),
        // Not "never ran", which would let it be made again.
        ("result_and_error", "both a result and an error"),
        ("null_result_and_error", "both a result and an error"),
        ("neither", "neither a result nor an error"),
    ] {
        let first = call(&agent, tool, json!({"n": 1})).await;
        let said = first.structured_content.clone().unwrap_or_default();
        assert_eq!(said["status"], "unknown", "{tool}: {}", text(&first));
        assert!(text(&first).contains(why), "{tool}: {}", text(&first));
        // Asked again, it is not made again: a person must settle it first.
        let again = call(&agent, tool, json!({"n": 1})).await;
        assert_eq!(
            again.structured_content.clone().unwrap_or_default()["status"],
            "unknown",
            "{tool}: {}",
            text(&again)
        );
    }
    assert_eq!(
        bench.acted(),
        [
            "start_task",
            "needs_input",
            "old_task",
            "old_task_with_content",
            "new_kind",
            "result_and_error",
            "null_result_and_error",
            "neither"
        ]
    );
    // None of them is recorded as sent, and each is listed for a person.
    let audit = bench.cli(&["audit", "L", "--json"]);
    let listed: Value = serde_json::from_slice(&audit.stdout).unwrap();
    let unknown: Vec<&str> = listed["unknown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["meta"]["tool"].as_str().unwrap())
        .collect();
    assert_eq!(unknown.len(), 8, "{listed}");
    for tool in [
        "start_task",
        "needs_input",
        "old_task",
        "old_task_with_content",
        "new_kind",
        "result_and_error",
        "null_result_and_error",
        "neither",
    ] {
        assert!(unknown.contains(&tool), "{tool}: {listed}");
    }
    agent.cancel().await.unwrap();
}

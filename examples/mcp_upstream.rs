//! A fake upstream MCP server for the proxy's tests (`tests/mcp/`), written with rmcp
//! as a real one would be. Its tools append a line to the file named by
//! `$FAKE_UPSTREAM_LOG` (one line per time a tool acted), so a test counts what
//! happened by counting lines; some answer slowly, die before or after acting, or
//! answer with `isError`. It also offers one resource (the log, `log://acted`), to
//! which a client may subscribe, one prompt (`summarise`, whose topic it completes),
//! and log messages once a client sets a level, so that the proxy's relay of all of
//! them is tested. It writes to its standard error when a tool asks
//! (`say_on_stderr`), and as it ends when `$FAKE_UPSTREAM_BYE` is set.
//!
//! ```sh
//! FAKE_UPSTREAM_LOG=/tmp/acted cargo run --example mcp_upstream
//! ```

// Logging and resources/subscribe are MCP 2025-11-25's, the version clients negotiate
// today; rmcp marks them deprecated for what comes after (SEP-2577).
#![allow(deprecated)]

use std::io::Write;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourcesResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam, Prompt,
    PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceUpdatedNotificationParam, Role,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

struct Fake {
    tool_router: ToolRouter<Fake>,
    /// Whether the client subscribed to the log, and asked for log messages.
    subscribed: std::sync::atomic::AtomicBool,
    logging: std::sync::atomic::AtomicBool,
}

#[derive(Deserialize, JsonSchema)]
struct Line {
    /// The line to append.
    line: String,
    /// Who it is for (a recipient argument for keys).
    #[serde(default)]
    #[allow(dead_code)]
    to: Option<String>,
    /// Seconds to wait before acting.
    #[serde(default)]
    seconds: Option<f64>,
    /// How many progress notifications to send (3 when not given).
    #[serde(default)]
    steps: Option<u32>,
    /// Seconds between them (all at once when not given).
    #[serde(default)]
    step_seconds: Option<f64>,
    /// A volatile argument, left out of keys by the policies.
    #[serde(default)]
    #[allow(dead_code)]
    request_id: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Said {
    /// The line to write to standard error.
    line: String,
    /// How many times (once when not given).
    #[serde(default)]
    times: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct Acted {
    /// The line appended.
    written: String,
    /// Which line of the file it is (1 for the first).
    id: String,
}

fn append(line: &str) -> Acted {
    let path = std::env::var("FAKE_UPSTREAM_LOG").expect("FAKE_UPSTREAM_LOG names the file");
    // A test that ended before a slow call acted has removed its directory: nothing
    // to write to, and nobody to tell.
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
    let count = std::fs::read_to_string(&path).map_or(0, |t| t.lines().count());
    Acted {
        written: line.to_owned(),
        id: format!("line-{count}"),
    }
}

async fn wait(seconds: Option<f64>) {
    if let Some(s) = seconds {
        tokio::time::sleep(Duration::from_secs_f64(s)).await;
    }
}

#[tool_router(router = tool_router)]
impl Fake {
    #[tool(description = "Append a line (acts once per call).")]
    async fn append(
        &self,
        Parameters(args): Parameters<Line>,
        context: RequestContext<RoleServer>,
    ) -> Json<Acted> {
        use std::sync::atomic::Ordering;
        wait(args.seconds).await;
        let acted = append(&args.line);
        if self.logging.load(Ordering::SeqCst) {
            let said = LoggingMessageNotificationParam::new(
                LoggingLevel::Info,
                serde_json::json!(format!("appended {}", args.line)),
            );
            let _ = context.peer.notify_logging_message(said).await;
        }
        if self.subscribed.load(Ordering::SeqCst) {
            let changed = ResourceUpdatedNotificationParam::new(LOG_URI);
            let _ = context.peer.notify_resource_updated(changed).await;
        }
        Json(acted)
    }

    #[tool(description = "Append a line, telling progress first.")]
    async fn append_with_progress(
        &self,
        Parameters(args): Parameters<Line>,
        context: RequestContext<RoleServer>,
    ) -> Json<Acted> {
        if let Some(token) = context.meta.get_progress_token() {
            for step in 1..=args.steps.unwrap_or(3) {
                if step > 1 {
                    wait(args.step_seconds).await;
                }
                let progress = ProgressNotificationParam::new(token.clone(), f64::from(step));
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        wait(args.seconds).await;
        Json(append(&args.line))
    }

    #[tool(description = "Append a line, then die without answering.")]
    async fn die_after(&self, Parameters(args): Parameters<Line>) -> Json<Acted> {
        wait(args.seconds).await;
        append(&args.line);
        std::process::exit(3)
    }

    #[tool(description = "Die without acting or answering.")]
    async fn die_before(&self, Parameters(args): Parameters<Line>) -> Json<Acted> {
        wait(args.seconds).await;
        std::process::exit(3)
    }

    #[tool(
        description = "Refuse the call as invalid, a JSON-RPC error saying the tool never ran, after `seconds` (never acts)."
    )]
    async fn reject_after(
        &self,
        Parameters(args): Parameters<Line>,
    ) -> Result<Json<Acted>, ErrorData> {
        wait(args.seconds).await;
        Err(ErrorData::invalid_params(
            format!("will not write {}", args.line),
            None,
        ))
    }

    #[tool(description = "Answer with isError without acting.")]
    async fn refuse(&self, Parameters(args): Parameters<Line>) -> Result<Json<Acted>, String> {
        Err(format!("refused to write {}", args.line))
    }

    #[tool(
        description = "Answer with the line (never acts).",
        annotations(read_only_hint = true)
    )]
    async fn echo(&self, Parameters(args): Parameters<Line>) -> String {
        args.line
    }

    #[tool(
        description = "Write the line to standard error, then answer with it (never acts).",
        annotations(read_only_hint = true)
    )]
    async fn say_on_stderr(&self, Parameters(args): Parameters<Said>) -> String {
        let mut stderr = std::io::stderr().lock();
        for _ in 0..args.times.unwrap_or(1) {
            let _ = writeln!(stderr, "{}", args.line);
        }
        let _ = stderr.flush();
        args.line
    }

    #[tool(
        description = "Read the log (never acts).",
        annotations(read_only_hint = true)
    )]
    async fn read_log(&self) -> String {
        let path = std::env::var("FAKE_UPSTREAM_LOG").unwrap_or_default();
        std::fs::read_to_string(path).unwrap_or_default()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Fake {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .enable_logging()
                .build(),
        );
        info.server_info.name = "fake-upstream".into();
        info
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(LOG_URI, "acted").with_description("What the tools did, a line each"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != LOG_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        let path = std::env::var("FAKE_UPSTREAM_LOG").unwrap_or_default();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, LOG_URI)]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if request.uri != LOG_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        self.subscribed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.logging
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let values = ["the inbox", "the outbox"]
            .into_iter()
            .filter(|topic| topic.starts_with(&request.argument.value))
            .map(str::to_owned)
            .collect();
        let completion =
            CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(completion))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "summarise",
            Some("Summarise a topic"),
            Some(vec![PromptArgument::new("topic").with_required(true)]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let topic = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("topic"))
            .and_then(|t| t.as_str())
            .ok_or_else(|| ErrorData::invalid_params("summarise needs a topic", None))?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Summarise {topic}."),
        )])
        .into())
    }
}

/// The fake's one resource: its log.
const LOG_URI: &str = "log://acted";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let fake = Fake {
        tool_router: Fake::tool_router(),
        subscribed: Default::default(),
        logging: Default::default(),
    };
    let service = fake
        .serve(rmcp::transport::stdio())
        .await
        .expect("the session starts");
    let _ = service.waiting().await;
    // Its input closed, a server may say something as it ends; a test asks for it.
    if let Ok(bye) = std::env::var("FAKE_UPSTREAM_BYE") {
        eprintln!("{bye}");
    }
}

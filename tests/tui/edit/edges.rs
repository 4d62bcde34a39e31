//! The edges of edit-then-approve in the TUI (findings E4, E9, E10, and the quorum's
//! count): a kept edit that cannot be saved never traps the reviewer (`E` starts from
//! the draft, an emptied file drops it), the footer lists `e`, an `$EDITOR` split into
//! words names the program it tried, the approval of an edit says whose edit it is, a
//! reject met while editing gives its reason, a read-only ledger is said before the
//! editor opens, an edit saved while a signal ends the UI (and one kept only in
//! memory at `q`) is kept in a named owner-only file, and the editor files a killed UI
//! left are removed while a running UI's are not. The real binary in tmux on a socket
//! of its own; the editor is a small script that records what it was given. Every step
//! waits for a file, the screen or the process, never for a fixed time. Without tmux
//! the tests say so and pass.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tmux::{Term, react};

use crate::harness;
use crate::harness::tmux;
use harness::cli_expecting as cli;
use harness::{Tmpfs, bin, stdout, wait_for_file};

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// The screen's words on one line: a status line wraps.
fn words(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

const KEY: &str = "invoice-4711-due";

fn original() -> Value {
    json!({"to": "ana@example.com", "body": "Hello Ana,\nyour invoice 4711 is due.\nThe team"})
}

/// What the editor is given for `original()`.
const ORIGINAL_TEXT: &str = "{\n  \"body\": \"Hello Ana,\\nyour invoice 4711 is due.\\nThe team\",\n  \"to\": \"ana@example.com\"\n}\n";

/// Text that is not JSON (no closing brace).
const BROKEN: &str =
    "{\n  \"body\": \"Hello Ana, due on Friday.\",\n  \"to\": \"ana@example.com\"\n";

/// A ledger with one queued draft by agent (under KEY), a directory the editor
/// stand-in reports to, and one for temporary files.
struct Setup {
    dir: tempfile::TempDir,
    ledger: PathBuf,
    out: PathBuf,
    tmp: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        Setup::with_ledger_in(None)
    }

    /// With the ledger in `dir` when given (a filesystem of the test's own).
    fn with_ledger_in(dir: Option<&Path>) -> Setup {
        let base = tempfile::tempdir().unwrap();
        let ledger = dir.unwrap_or(base.path()).join("ledger.db");
        let out = base.path().join("editor-out");
        let tmp = base.path().join("tmp");
        std::fs::create_dir(&out).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        let setup = Setup {
            dir: base,
            ledger,
            out,
            tmp,
        };
        setup.submit(&original());
        setup
    }

    fn submit(&self, payload: &Value) {
        let file = self.dir.path().join("submitted.json");
        std::fs::write(&file, payload.to_string()).unwrap();
        cli(
            &[
                "draft",
                "submit",
                p(&self.ledger),
                "--key",
                KEY,
                "--payload",
                p(&file),
                "--meta",
                r#"{"to":"ana@example.com","intent":"invoice-due"}"#,
                "--by",
                "agent",
            ],
            0,
        );
    }

    /// An editor stand-in at `path`: it records what it was given (`given-N`), runs
    /// `body` (shell, the file in $f, the call's number from 0 in $n), keeps a copy of
    /// what it saved (`saved-N`) and says it is done by a rename (`done-N`).
    fn editor_at(&self, path: &Path, body: &str) -> PathBuf {
        let out = self.out.display();
        let script = format!(
            "#!/bin/sh\n\
             o=\"{out}\"\n\
             for f in \"$@\"; do :; done\n\
             n=$(ls \"$o\" | grep -c '^done-')\n\
             cat \"$f\" > \"$o/given-$n\"\n\
             {body}\n\
             cat \"$f\" > \"$o/saved-$n\"\n\
             touch \"$o/done-$n.tmp\" && mv \"$o/done-$n.tmp\" \"$o/done-$n\"\n"
        );
        std::fs::write(path, script).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_owned()
    }

    fn editor(&self, body: &str) -> PathBuf {
        self.editor_at(&self.dir.path().join("editor.sh"), body)
    }

    /// `send-once tui LEDGER --by BY` in tmux, with `env` set and its stderr in
    /// `stderr.txt`; nothing else of the test's environment changes what it does.
    fn start_as(&self, by: &str, env: &[String], tag: &str) -> Term {
        let mut command: Vec<String> = ["env", "-u", "NO_COLOR", "-u", "SEND_ONCE_FIXED_NOW_MS"]
            .into_iter()
            .chain(["-u", "SEND_ONCE_TUI_FAULT", "-u", "SEND_ONCE_USER"])
            .chain(["-u", "SEND_ONCE_LEDGER", "-u", "PAGER", "-u", "VISUAL"])
            .chain(["-u", "EDITOR"])
            .map(str::to_owned)
            .collect();
        command.push(format!("TMPDIR={}", self.tmp.display()));
        command.extend(env.iter().cloned());
        command.push(bin().display().to_string());
        command.extend(["tui".into(), self.ledger.display().to_string()]);
        command.extend(["--by".into(), by.into()]);
        // exec: the pane's process is the UI itself, so its pid and exit status are
        // the UI's; its stderr goes to a file the test reads after it ends.
        let quoted = shell_words::join(&command);
        let err = self.dir.path().join("stderr.txt");
        let line = format!("exec {quoted} 2>{}", shell_words::quote(p(&err)));
        let term = Term::start(self.dir.path(), tag, (120, 36), &[], &["sh", "-c", &line]);
        term.wait_for("to: ana@example.com · intent: invoice-due");
        term
    }

    /// The UI as dana, `$VISUAL` the stand-in.
    fn start(&self, editor: &Path, tag: &str) -> Term {
        self.start_as("dana", &[format!("VISUAL={}", editor.display())], tag)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn wait_done(&self, n: usize) {
        wait_for_file(&self.out.join(format!("done-{n}")), react());
    }

    fn ui_stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.txt")).unwrap_or_default()
    }

    fn show(&self) -> Value {
        let out = cli(&["draft", "show", p(&self.ledger), "1", "--json"], 0);
        serde_json::from_str(&stdout(&out)).expect("JSON")
    }

    fn edits(&self) -> Vec<Value> {
        self.show()["decisions"]
            .as_array()
            .expect("decisions")
            .iter()
            .filter(|d| d["action"] == "edit")
            .cloned()
            .collect()
    }

    /// The files in the temporary directory whose names start with `prefix`.
    fn temp_files(&self, prefix: &str) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&self.tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        found.sort();
        found
    }
}

/// The kept files stderr names, one a line ("… is kept in PATH").
fn kept_paths(stderr: &str) -> Vec<PathBuf> {
    stderr
        .lines()
        .filter_map(|l| l.split_once(" that was not saved is kept in "))
        .map(|(_, path)| PathBuf::from(path.trim()))
        .collect()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

// ---------------------------------------------------------------------------------
// E9(a), E9(b): a kept edit that cannot be saved never traps; `e` is in the footer.

#[test]
fn a_kept_edit_that_cannot_be_saved_never_traps_the_reviewer() {
    require_tmux!();
    let s = Setup::new();
    // Calls 0 and 2 save text that is not JSON; 1 and 4 change nothing; 3 empties
    // the file.
    let editor = s.editor(&format!(
        "case $n in 0|2) printf '%s' '{BROKEN}' > \"$f\";; 3) : > \"$f\";; esac"
    ));
    let term = s.start(&editor, "trap");
    let screen = term.screen();
    let footer = screen.lines().last().unwrap_or_default().to_owned();
    assert!(
        footer.contains("a approve") && footer.contains("e edit"),
        "the Approvals footer lists e with a r c:\n{screen}"
    );

    term.press(&["e"]);
    s.wait_done(0);
    term.wait_for_words("e opens your edit again. E starts from the draft instead.");

    // The help says what E does.
    term.press(&["?"]);
    let help = term.wait_for("Keys: Approvals");
    assert!(
        help.lines()
            .any(|l| l.contains(" E ") && l.contains("edit anew, drop kept")),
        "{help}"
    );
    term.press(&["Escape"]);
    // Apart, or Esc and the next key read as Alt-E.
    term.wait_until("the help to close", |screen| {
        !screen.contains("Keys: Approvals")
    });

    // E: the draft's payload, not the broken text, and the status line says the kept
    // edit was dropped.
    term.press(&["E"]);
    s.wait_done(1);
    assert_eq!(
        s.read("given-1"),
        ORIGINAL_TEXT,
        "E opens the draft as it is"
    );
    let screen = term.wait_for_words("Your earlier kept edit was dropped (E).");
    assert!(words(&screen).contains("No change:"), "{screen}");

    // Dropped for good: `e` opens the draft's payload too.
    term.press(&["e"]);
    s.wait_done(2);
    assert_eq!(s.read("given-2"), ORIGINAL_TEXT, "nothing kept after E");
    term.wait_for_words("e opens your edit again.");

    // An emptied file drops the kept edit, and says so.
    term.press(&["e"]);
    s.wait_done(3);
    assert_eq!(s.read("given-3"), BROKEN, "e reopens the kept edit");
    term.wait_for_words(
        "The file was saved empty: your kept edit of draft 1 is dropped, and e opens revision 1 as it is. Nothing was changed.",
    );
    term.press(&["e"]);
    s.wait_done(4);
    assert_eq!(s.read("given-4"), ORIGINAL_TEXT, "the emptied edit is gone");
    term.wait_for_words("No change:");

    term.quit();
    assert_eq!(s.show()["revision"], 1, "nothing was written");
    assert!(s.edits().is_empty(), "no edit reached the queue");
    // Each text refused as not JSON was kept in a file as it was refused; they are
    // named at exit, dropped or not.
    let kept = kept_paths(&s.ui_stderr());
    assert_eq!(kept.len(), 2, "{}", s.ui_stderr());
    for path in &kept {
        assert_eq!(std::fs::read_to_string(path).unwrap(), BROKEN);
    }
}

// ---------------------------------------------------------------------------------
// E9(c): $EDITOR split into words names the program tried.

#[test]
fn an_editor_path_with_spaces_names_the_program_that_was_tried() {
    require_tmux!();
    let s = Setup::new();
    let spaced = s.dir.path().join("dir with space");
    std::fs::create_dir(&spaced).unwrap();
    let editor = s.editor_at(&spaced.join("ed it.sh"), "");
    let term = s.start_as("dana", &[format!("EDITOR={}", editor.display())], "spaces");
    term.press(&["e"]);
    let first = s.dir.path().join("dir");
    let want = format!(
        "Editor: editor `{}` not found (from EDITOR=`{}`; quote a path with spaces). Nothing was changed.",
        first.display(),
        editor.display()
    );
    term.wait_for_words(&want);
    assert!(!s.out.join("done-0").exists(), "nothing ran");
    term.quit();
    assert_eq!(s.show()["revision"], 1);
}

// ---------------------------------------------------------------------------------
// E9(d): the approval of a revision an edit wrote says whose edit it is.

#[test]
fn the_approval_of_an_edit_says_whose_edit_of_which_revision_it_is() {
    require_tmux!();
    let s = Setup::new();
    let edited = s.dir.path().join("edited.json");
    std::fs::write(
        &edited,
        json!({"to": "ana@example.com", "body": "Hello Ana,\nyour invoice 4711 is due on Friday.\nThe team"})
            .to_string(),
    )
    .unwrap();
    let l = p(&s.ledger);
    cli(
        &[
            "draft",
            "edit",
            l,
            "1",
            "--payload",
            p(&edited),
            "--by",
            "erin",
            "--seen-revision",
            "1",
        ],
        0,
    );
    let editor = s.editor("");
    let term = s.start(&editor, "whose");
    term.wait_for("revision 2 by erin");
    term.press(&["a"]);
    term.wait_for("Approve draft 1 (revision 2)");
    term.press(&["Enter"]);
    let screen = term.wait_for("confirm");
    // The confirmation wraps inside its box.
    assert!(
        words(&screen)
            .contains("Approve draft 1, revision 2 (erin's edit of revision 1 by agent),")
            && screen.contains("for 12h, as dana?"),
        "{screen}"
    );
    term.press(&["y"]);
    term.wait_for("Approved draft 1 (revision 2)");
    term.quit();
}

// ---------------------------------------------------------------------------------
// E9(e): a reject met while editing gives its reason.

#[test]
fn a_reject_while_the_editor_is_open_gives_its_reason() {
    require_tmux!();
    let s = Setup::new();
    let reject = format!(
        "env -u SEND_ONCE_USER -u SEND_ONCE_LEDGER '{}' reject '{}' 1 --by sam --reason 'wrong amount, ask billing' >/dev/null 2>&1",
        bin().display(),
        s.ledger.display()
    );
    let editor = s.editor(&format!(
        "{reject}; sed -i 's/is due\\./is due on Friday./' \"$f\""
    ));
    let term = s.start(&editor, "reject");
    term.press(&["e"]);
    s.wait_done(0);
    let screen = term.wait_for_words("your edit is kept in");
    let said = words(&screen);
    assert!(
        said.contains(
            "Not saved: draft 1 changed while you were editing it (it was rejected by sam at "
        ) && said.contains(", reason: \"wrong amount, ask billing\"), so the edit was not saved"),
        "{screen}"
    );
    term.quit();
    assert_eq!(s.show()["state"], "rejected");
}

// ---------------------------------------------------------------------------------
// E9(f): on a read-only ledger `e` refuses before the editor opens.

#[test]
fn e_on_a_read_only_ledger_refuses_before_the_editor_opens() {
    require_tmux!();
    let Some(mount) = Tmpfs::mount("8m") else {
        return;
    };
    let s = Setup::with_ledger_in(Some(&mount.point));
    mount.remount_read_only();
    let editor = s.editor("");
    let term = s.start(&editor, "readonly");
    term.press(&["e"]);
    let screen = term.wait_for_words("Not opening the editor:");
    let said = words(&screen);
    assert!(
        said.contains(&format!(
            "Not opening the editor: {} is read-only here, so an edit of draft 1 could not be saved. Nothing was changed.",
            s.ledger.display()
        )),
        "{screen}"
    );
    assert!(
        !s.out.join("given-0").exists(),
        "the editor was never started"
    );
    term.press(&["E"]);
    term.wait_for_words("Not opening the editor:");
    term.quit();
    assert!(
        s.out.read_dir().unwrap().next().is_none(),
        "the editor never ran"
    );
}

// ---------------------------------------------------------------------------------
// E4: a signal while the editor is open, and `q` with an edit kept in memory only.

/// Waits until no signal is pending for process `pid` (its handler has run): the
/// shared set and every thread's.
fn wait_delivered(pid: &str) {
    let start = Instant::now();
    let pending = |status: &str| {
        status
            .lines()
            .filter(|l| l.starts_with("ShdPnd:") || l.starts_with("SigPnd:"))
            .any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|m| !m.trim_start_matches('0').is_empty())
            })
    };
    loop {
        let mut any = false;
        let proc = format!("/proc/{pid}/task");
        for task in std::fs::read_dir(&proc).unwrap().flatten() {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            any |= pending(&status);
        }
        if !any {
            return;
        }
        assert!(start.elapsed() < react(), "the signal was not delivered");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_signal_while_the_editor_is_open_keeps_what_was_saved_in_a_named_file() {
    require_tmux!();
    for (signal, number) in [("TERM", 15), ("HUP", 1)] {
        let s = Setup::new();
        // It saves, says so, then waits to be let go (as a person at an editor would).
        let editor = s.editor(&format!(
            "sed -i 's/is due\\./is due, SIG{signal}-EDIT./' \"$f\"; touch \"$o/edited\"; i=0; while [ ! -e \"$o/go\" ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done"
        ));
        let term = s.start(&editor, &format!("sig{signal}"));
        term.press(&["e"]);
        wait_for_file(&s.out.join("edited"), react());
        let pid = term.display("#{pane_pid}");
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), pid.as_str()])
            .status()
            .unwrap();
        assert!(killed.success());
        wait_delivered(&pid);
        std::fs::write(s.out.join("go"), "").unwrap();
        assert_eq!(
            term.wait_exit(),
            128 + number,
            "SIG{signal} ends the UI as before"
        );
        s.wait_done(0);

        let said = s.ui_stderr();
        let kept = kept_paths(&said);
        assert_eq!(kept.len(), 1, "one kept file named on stderr: {said:?}");
        let name = kept[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("send-once-edit-draft-1-"), "{name}");
        assert_eq!(
            std::fs::read_to_string(&kept[0]).unwrap(),
            s.read("saved-0"),
            "the file holds what the editor saved"
        );
        assert!(s.read("saved-0").contains(&format!("SIG{signal}-EDIT")));
        assert_eq!(mode_of(&kept[0]), 0o600, "owner-only");
        assert!(
            s.temp_files("send-once-draft-").is_empty(),
            "the editor's own file is removed"
        );
        assert_eq!(s.show()["revision"], 1, "nothing was sent to the ledger");
        assert!(s.edits().is_empty());
    }
}

/// What the editor saved is not UTF-8: refused before the queue is asked, so it is
/// kept in memory only, for `e`; quitting writes it to a file and names it.
#[test]
fn q_with_an_edit_kept_only_in_memory_writes_it_to_a_named_file() {
    require_tmux!();
    let s = Setup::new();
    let editor = s.editor("printf '{\\n  \"body\": \"Caf\\351\"\\n}\\n' > \"$f\"");
    let term = s.start(&editor, "quitkept");
    term.press(&["e"]);
    s.wait_done(0);
    term.wait_for_words("not UTF-8 text (invalid byte at offset 16). e opens your edit again.");
    assert!(
        s.temp_files("send-once-edit-").is_empty(),
        "kept in memory only, until now"
    );
    term.quit();
    let said = s.ui_stderr();
    let kept = kept_paths(&said);
    assert_eq!(kept.len(), 1, "{said:?}");
    assert_eq!(
        std::fs::read_to_string(&kept[0]).unwrap(),
        "{\n  \"body\": \"Caf\u{fffd}\"\n}\n",
        "the text as it was kept (the byte that is not UTF-8 marked)"
    );
    assert_eq!(mode_of(&kept[0]), 0o600);
    assert_eq!(s.temp_files("send-once-edit-"), kept);
    assert_eq!(s.show()["revision"], 1);
}

// ---------------------------------------------------------------------------------
// E10: the editor files a killed UI left behind.

#[test]
fn a_stale_editor_file_of_a_dead_ui_is_kept_as_an_edit_and_a_running_uis_is_left() {
    require_tmux!();
    let s = Setup::new();
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let live = std::process::id();
    let file = |name: String| {
        let path = s.tmp.join(name);
        std::fs::write(&path, ORIGINAL_TEXT).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
        path
    };
    let stale = file(format!("send-once-draft-1-pid{dead}-Ab12Cd.json"));
    let running = file(format!("send-once-draft-1-pid{live}-Ef34Gh.json"));
    // Not the editor's files of this naming: a kept edit, and an older name.
    let kept_edit = file(format!("send-once-edit-draft-1-pid{dead}-Ij56Kl.json"));
    let unnamed = file("send-once-draft-1-Mn78Op.json".to_owned());

    let editor = s.editor("");
    let term = s.start(&editor, "stale");
    // It may hold an edit saved after the UI was killed: kept under a kept edit's
    // name, never deleted (finding U3).
    let rescued = s.tmp.join(format!(
        "send-once-edit-draft-1-stale-pid{dead}-Ab12Cd.json"
    ));
    assert!(
        !stale.exists(),
        "the dead UI's file is moved out of the editor's names"
    );
    assert_eq!(std::fs::read_to_string(&rescued).unwrap(), ORIGINAL_TEXT);
    assert!(running.exists(), "a running UI's file is left");
    assert!(
        kept_edit.exists() && unnamed.exists(),
        "nothing else is touched"
    );
    term.quit();
    let said = s.ui_stderr();
    assert!(
        said.contains("left by a send-once tui that was killed")
            && said.contains(&rescued.display().to_string()),
        "{said}"
    );
}

// ---------------------------------------------------------------------------------
// Under N-of-M, how many more must approve.

#[test]
fn under_three_approvals_the_refusal_says_how_many_more_must_approve() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = p(&ledger);
    cli(&["init", l], 0);
    cli(&["policy", l, "--approvals", "3", "--by", "owner"], 0);
    let s = Setup::with_ledger_in(Some(dir.path()));
    let term = s.start_as("agent", &[], "author");
    term.press(&["a"]);
    term.wait_for("agent wrote revision 1 of draft 1; 3 more people must approve it.");
    term.quit();

    cli(&["approve", l, "1", "--by", "sam"], 0);
    let term = s.start_as("sam", &[], "twice");
    term.press(&["a"]);
    term.wait_for(
        "You (sam) already approved revision 1 (approved 1 of 3); 2 more people must approve it.",
    );
    term.quit();
}

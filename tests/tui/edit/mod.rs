//! Edit-then-approve in the TUI: `e` lends the terminal to the
//! person's editor on the selected draft's payload and takes it back; what the editor
//! saved becomes a new revision by the reviewer, shown with its diff, approved like
//! any other. The real binary in tmux on a socket of its own; the editor is a small
//! script that records what it was given and how the terminal was while it ran, then
//! rewrites the file. Every step waits for a file or for the screen, never for a fixed
//! time. Without tmux the tests say so and pass.

mod edges;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use tmux::{Term, react};

use crate::harness;
use crate::harness::tmux;
use harness::cli_expecting as cli;
use harness::{bin, stdout, wait_for_file};

/// `send-once tui LEDGER --by dana` for tmux, with `env` (NAME=VALUE) set and nothing
/// else from the test's environment changing what the UI does.
fn tui_command(ledger: &Path, env: &[String]) -> Vec<String> {
    let mut command: Vec<String> = ["env", "-u", "NO_COLOR", "-u", "SEND_ONCE_FIXED_NOW_MS"]
        .into_iter()
        .chain(["-u", "SEND_ONCE_TUI_FAULT", "-u", "SEND_ONCE_USER"])
        .chain(["-u", "SEND_ONCE_LEDGER", "-u", "PAGER", "-u", "VISUAL"])
        .chain(["-u", "EDITOR"])
        .map(str::to_owned)
        .collect();
    command.extend(env.iter().cloned());
    command.push(bin().display().to_string());
    command.extend(["tui".into(), ledger.display().to_string()]);
    command.extend(["--by".into(), "dana".into()]);
    command
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"))
}

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

const KEY: &str = "invoice-4711-due";

fn original() -> Value {
    json!({"to": "ana@example.com", "body": "Hello Ana,\nyour invoice 4711 is due.\nThe team"})
}

/// A directory with a ledger holding one queued draft (by agent, under KEY), a
/// directory the editor stand-in reports to, and one for temporary files.
struct Setup {
    dir: tempfile::TempDir,
    ledger: PathBuf,
    out: PathBuf,
    tmp: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger.db");
        let out = dir.path().join("editor-out");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&out).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        let setup = Setup {
            dir,
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

    /// An editor stand-in at `editor.sh`: it records its arguments, the file's mode
    /// and text, the terminal's modes and whether tmux shows the alternate screen, runs
    /// `body` (shell, with the file in $f and the call's number from 0 in $n), keeps a
    /// copy of what it saved, and then says it is done (by a rename: once `done-N` is
    /// there, everything else of call N is written).
    fn editor(&self, body: &str) -> PathBuf {
        let out = self.out.display();
        let path = self.dir.path().join("editor.sh");
        let script = format!(
            "#!/bin/sh\n\
             o=\"{out}\"\n\
             for f in \"$@\"; do :; done\n\
             n=$(ls \"$o\" | grep -c '^done-')\n\
             printf '%s\\n' \"$@\" > \"$o/args\"\n\
             stat -c %a \"$f\" > \"$o/mode\"\n\
             cat \"$f\" > \"$o/given-$n\"\n\
             stty -a > \"$o/stty\"\n\
             tmux display -p '#{{alternate_on}}' > \"$o/screen\"\n\
             {body}\n\
             cat \"$f\" > \"$o/saved-$n\"\n\
             touch \"$o/done-$n.tmp\" && mv \"$o/done-$n.tmp\" \"$o/done-$n\"\n"
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The UI in tmux, `$VISUAL` the stand-in with an argument of its own (so it is
    /// split into words), `$EDITOR` a program that fails (so `$VISUAL` must win).
    fn start(&self, editor: &Path, tag: &str) -> Term {
        let env = [
            format!("VISUAL={} --wait", editor.display()),
            "EDITOR=false".to_owned(),
            format!("TMPDIR={}", self.tmp.display()),
        ];
        let term = Term::start(
            self.dir.path(),
            tag,
            (120, 36),
            &[],
            &tui_command(&self.ledger, &env),
        );
        term.wait_for("ana@example.com · invoice-due");
        term
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn wait_done(&self, n: usize) {
        wait_for_file(&self.out.join(format!("done-{n}")), react());
    }

    fn show(&self) -> Value {
        json_of(&cli(&["draft", "show", p(&self.ledger), "1", "--json"], 0))
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

    fn hash_of_saved(&self, n: usize) -> String {
        let saved = self.out.join(format!("saved-{n}"));
        stdout(&cli(&["hash", p(&saved)], 0)).trim().to_owned()
    }
}

/// What the stand-in does to the payload: one word more in the body.
const SED: &str = "sed -i 's/is due\\./is due on Friday./' \"$f\"";

// ---------------------------------------------------------------------------------
// 1. Edit, see the diff, approve: the approval is of the edit.

#[test]
fn e_edits_the_payload_into_a_revision_that_is_then_approved() {
    require_tmux!();
    let s = Setup::new();
    let editor = s.editor(SED);
    let term = s.start(&editor, "edit");
    term.press(&["e"]);
    s.wait_done(0);

    // The editor had the terminal: the main screen, cooked mode; a file only its
    // owner can read, holding the payload as the screen shows it (pretty, keys in
    // canonical order), $VISUAL's own argument before it.
    assert_eq!(
        s.read("screen").trim(),
        "0",
        "the editor is on the main screen"
    );
    let stty = s.read("stty");
    assert!(
        stty.split_whitespace().any(|w| w == "icanon")
            && stty.split_whitespace().any(|w| w == "echo"),
        "the editor runs in cooked mode:\n{stty}"
    );
    assert_eq!(
        s.read("mode").trim(),
        "600",
        "the payload's file is owner-only"
    );
    let args = s.read("args");
    assert!(args.starts_with("--wait\n"), "{args:?}");
    assert_eq!(
        s.read("given-0"),
        "{\n  \"body\": \"Hello Ana,\\nyour invoice 4711 is due.\\nThe team\",\n  \"to\": \"ana@example.com\"\n}\n"
    );

    // Back on the UI's screen, with the new revision, its author and its diff.
    term.wait_for("revision 2 by dana: needs approval");
    // The status comes with the save's answer; the pane shows the new revision once the
    // reload that follows it is drawn.
    let screen = term.wait_for("Draft 1 · revision 2 by dana");
    for want in [
        "Draft 1 · revision 2 by dana",
        "submitted ",
        "Payload: +1 -1 since revision 1",
        "│ your invoice 4711 is due on Friday.",
        "│ your invoice 4711 is due.",
    ] {
        assert!(
            screen.contains(want),
            "{want:?} not on the screen:\n{screen}"
        );
    }
    assert!(
        screen
            .lines()
            .any(|l| l.contains("+     │ your invoice 4711 is due on Friday."))
            && screen
                .lines()
                .any(|l| l.contains("-     │ your invoice 4711 is due.")),
        "the changed line is shown as removed and added:\n{screen}"
    );
    assert_eq!(
        term.display("#{alternate_on}"),
        "1",
        "the UI is back on its screen"
    );
    assert!(
        !screen.contains("Hello Ana,\\n"),
        "the editor's text is not left on the UI's screen:\n{screen}"
    );

    let shown = s.show();
    assert_eq!(shown["revision"], 2, "{shown:#}");
    assert_eq!(shown["revisionBy"], "dana", "{shown:#}");
    assert_eq!(
        shown["payload"]["body"],
        "Hello Ana,\nyour invoice 4711 is due on Friday.\nThe team"
    );
    let edits = s.edits();
    assert_eq!(edits.len(), 1, "{edits:#?}");
    assert_eq!(edits[0]["outcome"], "changed");
    assert_eq!(edits[0]["by"], "dana");
    assert_eq!(edits[0]["detail"]["toRevision"], 2);

    // Approved like any other, in the same screen: one key at a time works, so the
    // terminal is raw again.
    term.press(&["a"]);
    term.wait_for("Approve draft 1 (revision 2)");
    term.press(&["Enter"]);
    term.wait_for("confirm");
    term.press(&["y"]);
    term.wait_for("Approved draft 1 (revision 2)");
    let approval = json_of(&cli(&["approval", p(&s.ledger), "1"], 0));
    assert_eq!(
        approval["payloadHash"],
        s.hash_of_saved(0).as_str(),
        "the approval is of what the editor saved: {approval:#}"
    );
    term.press(&["4"]);
    term.wait_until("the edit in the Decisions view", |screen| {
        screen
            .lines()
            .any(|l| l.contains("dana") && l.contains(" edit ") && l.contains("draft 1"))
    });
    term.quit();
    assert_eq!(
        term.display("#{alternate_on}"),
        "0",
        "the terminal is given back"
    );
    let left: Vec<_> = std::fs::read_dir(&s.tmp).unwrap().collect();
    assert!(left.is_empty(), "the editor's file is removed: {left:?}");
}

// ---------------------------------------------------------------------------------
// 2. Not JSON: refused with where, nothing written, the text opened again on `e`.

#[test]
fn an_edit_that_is_not_json_is_refused_and_opened_again() {
    require_tmux!();
    let s = Setup::new();
    let broken =
        "{\n  \"body\": \"Hello Ana, it is due on Friday.\",\n  \"to\": \"ana@example.com\"\n";
    let fixed = json!({"to": "ana@example.com", "body": "Hello Ana, it is due on Friday."});
    let editor = s.editor(&format!(
        "if [ \"$n\" = 0 ]; then printf '%s' '{broken}' > \"$f\"; else printf '%s' '{fixed}' > \"$f\"; fi"
    ));
    let term = s.start(&editor, "notjson");
    term.press(&["e"]);
    s.wait_done(0);
    let screen = term.wait_for_words("e opens your edit again.");
    assert!(
        screen
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("Not saved: the payload is not JSON: line 4, column 1:"),
        "the parser's message, with where:\n{screen}"
    );
    let shown = s.show();
    assert_eq!(shown["revision"], 1, "nothing was written: {shown:#}");
    assert!(s.edits().is_empty(), "bad input is not a decision");

    term.press(&["e"]);
    s.wait_done(1);
    assert_eq!(
        s.read("given-1"),
        broken,
        "the second `e` opens the edit that was refused, not the payload"
    );
    term.wait_for("revision 2 by dana: needs approval");
    assert_eq!(s.show()["payload"], fixed);
    term.quit();
}

// ---------------------------------------------------------------------------------
// 3. The draft moved on while the editor was open: refused, naming who; the edit is
// kept in a file only its owner can read.

#[test]
fn an_edit_of_a_draft_that_moved_on_is_refused_and_kept_in_a_file() {
    require_tmux!();
    let s = Setup::new();
    let newer = s.dir.path().join("newer.json");
    std::fs::write(
        &newer,
        json!({"to": "ana@example.com", "body": "Hello Ana, newer text."}).to_string(),
    )
    .unwrap();
    // While the editor is open the agent submits revision 2.
    let submit = format!(
        "env -u SEND_ONCE_USER -u SEND_ONCE_LEDGER '{}' draft submit '{}' --key {KEY} --payload '{}' --by agent >/dev/null 2>&1",
        bin().display(),
        s.ledger.display(),
        newer.display()
    );
    let editor = s.editor(&format!(
        "if [ \"$n\" = 0 ]; then {submit}; {SED}; else sed -i 's/newer/newest/' \"$f\"; fi"
    ));
    let term = s.start(&editor, "stale");
    term.press(&["e"]);
    s.wait_done(0);
    let screen = term.wait_for_words("your edit is kept in");
    let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "Not saved: draft 1 changed while you were editing it (revision 2 was added by agent at "
        ),
        "{screen}"
    );
    let kept: Vec<PathBuf> = std::fs::read_dir(&s.tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        kept.len(),
        1,
        "one file kept, the editor's removed: {kept:?}"
    );
    let kept = &kept[0];
    let name = kept.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("send-once-edit-draft-1-"), "{name}");
    assert!(
        words
            .replace(' ', "")
            .contains(&kept.display().to_string().replace(' ', "")),
        "the status line names {}:\n{screen}",
        kept.display()
    );
    assert_eq!(std::fs::read_to_string(kept).unwrap(), s.read("saved-0"));
    assert_eq!(
        std::fs::metadata(kept).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let shown = s.show();
    assert_eq!(shown["revision"], 2, "{shown:#}");
    assert_eq!(shown["revisionBy"], "agent", "the agent's revision stands");
    let edits = s.edits();
    assert_eq!(edits.len(), 1, "{edits:#?}");
    assert_eq!(edits[0]["outcome"], "refused");

    // The screen shows the agent's revision, and `e` now starts from it.
    term.wait_for("Hello Ana, newer text.");
    term.press(&["e"]);
    s.wait_done(1);
    assert!(s.read("given-1").contains("Hello Ana, newer text."));
    term.wait_for("revision 3 by dana: needs approval");
    term.quit();
}

// ---------------------------------------------------------------------------------
// 4. An editor that cannot start: said, nothing written, the screen back.

#[test]
fn an_editor_that_cannot_start_is_named_and_nothing_changes() {
    require_tmux!();
    let s = Setup::new();
    let missing = s.dir.path().join("no-such-editor");
    let term = s.start(&missing, "missing");
    term.press(&["e"]);
    let screen = term.wait_for_words("Nothing was changed.");
    let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    // $VISUAL is the program and an argument: the message names the program tried.
    assert!(
        words.contains(&format!(
            "Editor: editor `{}` not found (from VISUAL=`{} --wait`;",
            missing.display(),
            missing.display()
        )),
        "{screen}"
    );
    assert_eq!(
        term.display("#{alternate_on}"),
        "1",
        "the UI kept its screen"
    );
    assert_eq!(s.show()["revision"], 1);
    assert!(s.edits().is_empty());
    term.press(&["2"]);
    term.wait_for("[2 Unknown sends (0)]");
    term.quit();
}

//! `e`: a draft's payload edited in the person's own editor. The terminal is lent to
//! `$VISUAL` (else `$EDITOR`, else `vi`) as it is to the pager, on a temporary file
//! only this user can read; what it saved comes back as bytes for the queue to judge.
//! An edit the queue could not take because the draft moved on is kept in a file of
//! its own, so nothing typed is lost.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::terminal::{Lent, RunFailed, TerminalGuard, lend, try_first};

const EDITOR: Lent = Lent {
    who: "editor",
    a_who: "an editor",
    set: "$VISUAL or $EDITOR",
};

/// What names the editor's temporary files: `send-once-draft-ID-pidPID-…`. The pid is
/// the UI's, so that a later UI can tell a file left by one that died (kill -9) from
/// the file of a UI still running.
const DRAFT_FILE: &str = "send-once-draft-";

/// The variable the editor comes from and its value: the first of `$VISUAL` and
/// `$EDITOR` that is set and not blank.
fn chosen<'a>(visual: Option<&'a str>, editor: Option<&'a str>) -> Option<(&'static str, &'a str)> {
    [("VISUAL", visual), ("EDITOR", editor)]
        .into_iter()
        .find_map(|(name, value)| {
            value
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(|v| (name, v))
        })
}

/// The editor to run, from the values of `$VISUAL` and `$EDITOR`: the first one set
/// (and not blank), split as a shell would split it but without one; `vi` when
/// neither is.
pub fn editor_command(visual: Option<&str>, editor: Option<&str>) -> Result<Vec<String>, String> {
    let Some((name, line)) = chosen(visual, editor) else {
        return Ok(vec!["vi".to_owned()]);
    };
    let shown = crate::text::visible_inline(line);
    let argv =
        shell_words::split(line).map_err(|e| format!("cannot read ${name} ({shown:?}): {e}"))?;
    if argv.is_empty() {
        return Err(format!("cannot read ${name} ({shown:?}): no command in it"));
    }
    Ok(argv)
}

/// Why an editor named by `$VISUAL`/`$EDITOR` could not be found. A value that split
/// into several words names the first as the program tried, and the whole value it
/// came from: `EDITOR=/tmp/my dir/ed` runs `/tmp/my`, which looks like the whole path
/// missing unless it is said.
fn not_found(visual: Option<&str>, editor: Option<&str>, argv: &[String]) -> Option<String> {
    let (name, line) = chosen(visual, editor)?;
    let program = argv.first().filter(|_| argv.len() > 1)?;
    Some(format!(
        "editor `{}` not found (from {name}=`{}`; quote a path with spaces)",
        crate::text::visible_inline(program),
        crate::text::visible_inline(line)
    ))
}

/// A payload as the editor is given it: pretty, keys in the order the screen shows
/// them, ending in a line break, and every character that would act on the terminal
/// or hide or reorder text written as a `\u` escape, which JSON reads back as the
/// same character, so an unchanged save is the same payload.
pub fn editable(payload: &str) -> String {
    let pretty = crate::review::diff::pretty_canonical(payload);
    let mut text = String::with_capacity(pretty.len() + 1);
    for c in pretty.chars() {
        // Outside strings there are only spaces and line breaks; inside, JSON has
        // already escaped line breaks and tabs.
        if c != '\n' && crate::text::is_suspicious(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                text.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            text.push(c);
        }
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// How an editor run ended: whether the editor ran to a good end, and what its file
/// held afterwards either way (an editor that was killed, or the UI asked to end
/// meanwhile, may still have saved something worth keeping).
#[derive(Debug)]
pub struct EditorRun {
    /// Ok when the editor exited with status 0; else why it did not run or failed.
    pub ran: Result<(), String>,
    /// The file's bytes once the editor was done, or why they could not be read.
    pub saved: Result<Vec<u8>, String>,
}

impl EditorRun {
    /// What the editor saved, when it exited with status 0: else nothing was saved.
    pub fn result(self) -> Result<Vec<u8>, String> {
        self.ran?;
        self.saved
    }

    /// What the file holds when it is not `opened` (the text it was given), whatever
    /// the editor's exit: the edit there is to keep.
    pub fn changed(&self, opened: &str) -> Option<&[u8]> {
        self.saved
            .as_deref()
            .ok()
            .filter(|saved| *saved != opened.as_bytes())
    }
}

/// Opens `text` in the editor (see [`editor_command`]) as draft `id`'s payload, with
/// the terminal lent to it as to the pager (SIGINT and SIGQUIT are the editor's
/// meanwhile), and gives back how it ended and what the file holds then. The file is
/// created readable by its owner only, named with this process's id (see
/// [`keep_stale_files`]), and removed afterwards. An editor that cannot start, or
/// that exits otherwise than with 0, saved nothing.
///
/// It blocks until the editor exits: from the UI's runtime, call it inside
/// `tokio::task::block_in_place`.
pub fn run_editor(guard: &mut TerminalGuard, id: i64, text: &str) -> EditorRun {
    let failed = |why: String| EditorRun {
        ran: Err(why.clone()),
        saved: Err(why),
    };
    let (visual, editor) = (std::env::var("VISUAL").ok(), std::env::var("EDITOR").ok());
    let argv = match editor_command(visual.as_deref(), editor.as_deref()) {
        Ok(argv) => argv,
        Err(why) => return failed(why),
    };
    let file = tempfile::Builder::new()
        .prefix(&format!("{DRAFT_FILE}{id}-pid{}-", std::process::id()))
        .suffix(".json")
        .tempfile();
    let mut file = match file {
        Ok(file) => file,
        Err(e) => return failed(format!("cannot write the payload for the editor: {e}")),
    };
    if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.flush()) {
        return failed(format!("cannot write the payload for the editor: {e}"));
    }
    let path = file.path().to_owned();
    let ran = lend(guard, "editor", || {
        try_first(std::slice::from_ref(&argv), &path, &EDITOR).map_err(|failed| match failed {
            RunFailed::Other(why) => why,
            RunFailed::NotFound(_) => not_found(visual.as_deref(), editor.as_deref(), &argv)
                .unwrap_or_else(|| {
                    format!(
                        "cannot start an editor: `{}` not found; set $VISUAL or $EDITOR",
                        crate::text::visible_inline(&shell_words::join(&argv))
                    )
                }),
        })
    });
    // By its name: an editor may have saved by writing a new file over the old one.
    let saved = std::fs::read(&path).map_err(|e| format!("cannot read what the editor saved: {e}"));
    EditorRun { ran, saved }
}

/// Keeps the edited `text` of draft `id` in a new file in the temporary directory,
/// readable by its owner only, and gives back its name.
pub fn keep_edit(id: i64, text: &str) -> Result<PathBuf, String> {
    let mut file = tempfile::Builder::new()
        .prefix(&format!("send-once-edit-draft-{id}-"))
        .suffix(".json")
        .tempfile()
        .map_err(|e| format!("cannot create a file for it: {e}"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| format!("cannot write it to {}: {e}", file.path().display()))?;
    let (_, path) = file
        .keep()
        .map_err(|e| format!("cannot keep {}: {e}", e.file.path().display()))?;
    Ok(path)
}

/// The pid in the name of an editor's temporary file (`send-once-draft-ID-pidPID-…`),
/// if the name is one.
fn pid_in_name(name: &str) -> Option<libc::pid_t> {
    let rest = name.strip_prefix(DRAFT_FILE)?;
    let (id, rest) = rest.split_once("-pid")?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok().filter(|pid| *pid > 0)
}

/// Whether a process with this id is running (one of another user's counts).
fn running(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Keeps what an editor's temporary file of a UI that no longer runs holds (one
/// killed with SIGKILL while the editor was open: the reviewer may have saved an edit
/// into it after): each such file of this user in `dir`, written before `started`,
/// whose pid is not running, is renamed to a kept edit's name
/// (`send-once-edit-draft-ID-stale-…`), never deleted. A running UI's file is left.
/// Gives the draft id and the new path of each.
pub fn keep_stale_files(dir: &Path, started: std::time::SystemTime) -> Vec<(i64, PathBuf)> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut kept = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let Some(pid) = pid_in_name(name) else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let before_start = meta.modified().is_ok_and(|at| at < started);
        let Some((id, rest)) = name
            .strip_prefix(DRAFT_FILE)
            .and_then(|rest| rest.split_once('-'))
        else {
            continue;
        };
        let Ok(id) = id.parse::<i64>() else {
            continue;
        };
        let to = dir.join(format!("send-once-edit-draft-{id}-stale-{rest}"));
        if meta.file_type().is_file()
            && meta.uid() == me
            && before_start
            && pid != std::process::id() as libc::pid_t
            && !running(pid)
            && !to.exists()
            && std::fs::rename(&path, &to).is_ok()
        {
            kept.push((id, to));
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::{editable, editor_command, not_found, pid_in_name};

    #[test]
    fn only_an_editor_file_of_this_naming_gives_a_pid() {
        assert_eq!(
            pid_in_name("send-once-draft-7-pid4242-Ab3xYz.json"),
            Some(4242)
        );
        for other in [
            "send-once-draft-7-Ab3xYz.json",
            "send-once-edit-draft-7-pid4242-Ab3xYz.json",
            "send-once-draft--pid4242-Ab3xYz.json",
            "send-once-draft-7-pid0-Ab3xYz.json",
            "send-once-draft-7-pidx-Ab3xYz.json",
        ] {
            assert_eq!(pid_in_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_value_split_into_words_names_the_program_tried_and_where_it_came_from() {
        let line = "/tmp/dir with space/ed it.sh";
        let argv = editor_command(None, Some(line)).unwrap();
        assert_eq!(
            not_found(None, Some(line), &argv).unwrap(),
            "editor `/tmp/dir` not found (from EDITOR=`/tmp/dir with space/ed it.sh`; quote a path with spaces)"
        );
        assert_eq!(
            not_found(None, Some("nano"), &["nano".to_owned()]),
            None,
            "one word: the usual message"
        );
        let hostile = "/tmp/x\u{1b}]0;pwn\u{7} -w";
        let argv = editor_command(Some(hostile), None).unwrap();
        let said = not_found(Some(hostile), None, &argv).unwrap();
        assert!(!said.chars().any(crate::text::is_suspicious), "{said:?}");
        assert!(said.contains("from VISUAL="), "{said}");
    }

    #[test]
    fn the_editor_gets_hidden_and_controlling_characters_as_escapes_of_the_same_value() {
        let payload = "{\"to\":\"a\",\"body\":\"pay \u{202e}gnp.exe\u{200b} \\u001b[2J\\ud800\"}";
        let text = editable(payload);
        assert_eq!(
            text,
            "{\n  \"body\": \"pay \\u202egnp.exe\\u200b \\u001b[2J\\ud800\",\n  \"to\": \"a\"\n}\n"
        );
        let hash = |t: &str| crate::ledger::canonical::hash_payload_text(t).unwrap();
        assert_eq!(hash(&text), hash(payload), "the same payload");
    }

    #[test]
    fn visual_wins_over_editor_and_vi_is_the_last_resort() {
        let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            editor_command(Some("code --wait"), Some("nano")).unwrap(),
            words(&["code", "--wait"])
        );
        assert_eq!(
            editor_command(Some("  "), Some("'my editor' -n")).unwrap(),
            words(&["my editor", "-n"])
        );
        assert_eq!(editor_command(None, None).unwrap(), words(&["vi"]));
        assert!(
            editor_command(None, Some("vim 'unclosed"))
                .unwrap_err()
                .contains("$EDITOR")
        );
    }
}

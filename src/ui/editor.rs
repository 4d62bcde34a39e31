//! `e`: a draft's payload edited in the person's own editor. The terminal is lent to
//! `$VISUAL` (else `$EDITOR`, else `vi`) as it is to the pager, on a temporary file
//! only this user can read; what it saved comes back as bytes for the queue to judge.
//! An edit the queue could not take because the draft moved on is kept in a file of
//! its own, so nothing typed is lost.

use std::io::Write;
use std::path::PathBuf;

use super::terminal::{Lent, TerminalGuard, lend, run_first};

const EDITOR: Lent = Lent {
    who: "editor",
    a_who: "an editor",
    set: "$VISUAL or $EDITOR",
};

/// The editor to run, from the values of `$VISUAL` and `$EDITOR`: the first one set
/// (and not blank), split as a shell would split it but without one; `vi` when
/// neither is.
pub fn editor_command(visual: Option<&str>, editor: Option<&str>) -> Result<Vec<String>, String> {
    let chosen = [("$VISUAL", visual), ("$EDITOR", editor)]
        .into_iter()
        .find_map(|(name, value)| {
            value
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(|v| (name, v))
        });
    let Some((name, line)) = chosen else {
        return Ok(vec!["vi".to_owned()]);
    };
    let argv =
        shell_words::split(line).map_err(|e| format!("cannot read {name} ({line:?}): {e}"))?;
    if argv.is_empty() {
        return Err(format!("cannot read {name} ({line:?}): no command in it"));
    }
    Ok(argv)
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

/// Opens `text` in the editor (see [`editor_command`]) as draft `id`'s payload, with
/// the terminal lent to it as to the pager (SIGINT and SIGQUIT are the editor's
/// meanwhile), and gives back what the file holds when the editor exits with status
/// 0. The file is created readable by its owner only and removed afterwards. An
/// editor that cannot start, or that exits otherwise, is an error: nothing was saved.
///
/// It blocks until the editor exits: from the UI's runtime, call it inside
/// `tokio::task::block_in_place`.
pub fn run_editor(guard: &mut TerminalGuard, id: i64, text: &str) -> Result<Vec<u8>, String> {
    let argv = editor_command(
        std::env::var("VISUAL").ok().as_deref(),
        std::env::var("EDITOR").ok().as_deref(),
    )?;
    let mut file = tempfile::Builder::new()
        .prefix(&format!("send-once-draft-{id}-"))
        .suffix(".json")
        .tempfile()
        .map_err(|e| format!("cannot write the payload for the editor: {e}"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write the payload for the editor: {e}"))?;
    let path = file.path().to_owned();
    lend(guard, "editor", || run_first(&[argv], &path, &EDITOR))?;
    // By its name: an editor may have saved by writing a new file over the old one.
    std::fs::read(&path).map_err(|e| format!("cannot read what the editor saved: {e}"))
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

#[cfg(test)]
mod tests {
    use super::{editable, editor_command};

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

//! The house rules, read from the source: arrows between modules only run down the
//! layers below, no two files import each other round a circle, and each file and
//! function stays a room of one job (at most about 1,000 and 120 lines). In the manner of
//! rust-analyzer's `tidy.rs`: a test over `src/**/*.rs` that names both ends of an
//! arrow that breaks a rule.
//!
//! **What an import is.** A `use` item, or a path written inline, that starts with
//! `crate::`, `super::` or `self::` (or, in the binary, `send_once::`), `pub use`
//! included. `mod` declarations are not imports, and neither is code under
//! `#[cfg(test)]`. A path is resolved to the deepest file module it names
//! (`crate::ledger::decision::Action` is `src/ledger/decision.rs`, `crate::ledger::Entry`
//! is `src/ledger/mod.rs`).
//!
//! **Circles between files** are found among the arrows between files, leaving out a
//! module's own arrows down into its children (a `mod.rs` that re-exports its rooms is
//! their front door, not a second way round).
//!
//! **Known breaks.** The renovation (issue 27) removes the arrows listed in
//! [`KNOWN_UPWARD`] and the circles in [`KNOWN_CIRCLES`] one by one; the test fails on
//! any break not listed, and on a listed one that is gone (so the lists only shrink).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first: a module may import its own layer's modules and those in
/// the layers below it, never one above.
const LAYERS: &[(&str, &[&str])] = &[
    ("the JavaScript-compatible base", &["js"]),
    ("text and processes", &["text", "command", "procs"]),
    ("the ledger", &["ledger"]),
    ("approvals", &["approval"]),
    ("the review queue", &["review"]),
    ("providers", &["provider"]),
    ("the stores", &["stores"]),
    ("the opener and the configuration", &["open", "config"]),
    ("agents over MCP", &["mcp"]),
    ("the terminal UI", &["ui"]),
    ("the command line", &["cli", "main"]),
];

/// Arrows that run up today, as (from module, to module): none are left; one put back
/// here must be a step of a plan to remove it.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

/// Circles between files today, each as its files: none are left (the last, `ui/app.rs`,
/// `ui/verify.rs`, `ui/view/mod.rs`, went when layout and the pager's text moved below both).
const KNOWN_CIRCLES: &[&[&str]] = &[];

#[derive(Debug)]
struct SourceFile {
    /// Relative to `src`, as `ledger/decision.rs`.
    path: String,
    /// Its module path below the crate root, as `["ledger", "decision"]`.
    module: Vec<String>,
    /// Its text without comments, string contents and `#[cfg(test)]` items.
    code: String,
}

fn sources() -> Vec<SourceFile> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<SourceFile>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).expect("a source file is UTF-8");
            out.push(SourceFile {
                module: module_of(&rel),
                code: without_tests(&plain_code(&text)),
                path: rel,
            });
        }
    }
}

/// `ledger/mod.rs` is `["ledger"]`, `ledger/decision.rs` `["ledger", "decision"]`,
/// `lib.rs` and `main.rs` the root (the binary's root is named `main`).
fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The text with comments blanked and string and character literals emptied, so that
/// a path in a doc comment or a message is not read as an import.
fn plain_code(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(text.len(), |n| i + n);
            i = end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(text.len(), |n| i + n + 2);
            i = end;
        } else if let Some(hashes) = raw_string_start(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            let end = text[body..]
                .find(&close)
                .map_or(text.len(), |n| body + n + close.len());
            out.push_str("\"\"");
            i = end;
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if bytes[i] == b'\'' && char_literal_len(rest).is_some() {
            out.push_str("' '");
            i += char_literal_len(rest).unwrap();
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn raw_string_start(rest: &str) -> Option<usize> {
    let after = rest.strip_prefix('r').or_else(|| rest.strip_prefix("br"))?;
    let hashes = after.chars().take_while(|&c| c == '#').count();
    after[hashes..].starts_with('"').then_some(hashes)
}

/// The length of a character literal at the start of `rest` (`'a'`, `'\n'`,
/// `'\u{1f}'`), None for a lifetime.
fn char_literal_len(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices().skip(1);
    let (_, first) = chars.next()?;
    if first == '\\' {
        return rest[1..].find('\'').map(|n| n + 2).filter(|&n| n <= 12);
    }
    let (at, next) = chars.next()?;
    (next == '\'').then_some(at + 1)
}

/// The code without items under `#[cfg(test)]`: from the attribute to the end of the
/// item it marks (a block's closing brace, or a `;`).
fn without_tests(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let open = item.find('{');
        let semi = item.find(';');
        let end = match (open, semi) {
            (Some(o), Some(s)) if s < o => s + 1,
            (Some(o), _) => {
                let mut depth = 0;
                let mut end = item.len();
                for (i, c) in item[o..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, Some(s)) => s + 1,
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path the code names from `crate::`, `super::`, `self::` or `send_once::`,
/// with `use` groups (`use crate::ledger::{Entry, decision::Action}`) spread into one
/// path each, as segments.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::", "send_once::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let boundary = at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':');
            if !boundary {
                continue;
            }
            let head = start.trim_end_matches("::").to_owned();
            spread(&code[from..], vec![head], &mut out);
        }
    }
    out
}

/// Reads one path (or a `{…}` group of them) at the start of `rest` after `prefix`.
fn spread(rest: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut text = rest;
    loop {
        let word: String = text
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            if let Some(group) = text.strip_prefix('{') {
                for item in split_group(group) {
                    spread(item.trim(), path.clone(), out);
                }
                return;
            }
            break;
        }
        path.push(word.clone());
        text = &text[word.len()..];
        match text.strip_prefix("::") {
            Some(after) => text = after,
            None => break,
        }
    }
    out.push(path);
}

/// The items of a `{…}` group up to its closing brace, split at its top-level commas.
fn split_group(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

/// The file a path from `file` leads to: the deepest file module it names.
fn resolve<'a>(
    file: &SourceFile,
    path: &[String],
    files: &'a [SourceFile],
) -> Option<&'a SourceFile> {
    let mut absolute: Vec<String> = match path.first()?.as_str() {
        "crate" | "send_once" => Vec::new(),
        "self" => file.module.clone(),
        "super" => {
            let mut base = file.module.clone();
            // `super` of `ledger/decision.rs` is `ledger`; of `ledger/mod.rs`, the root.
            base.pop();
            base
        }
        _ => return None,
    };
    // The binary names the library's modules through `send_once::`, its own through
    // `crate::` (its root is `main.rs`, and its modules are under `cli`).
    let binary = file.path == "main.rs" || file.path.starts_with("cli/");
    let mut rest = &path[1..];
    while rest.first().is_some_and(|s| s == "super") {
        absolute.pop();
        rest = &rest[1..];
    }
    if binary && path[0] == "crate" && rest.first().is_some_and(|s| s != "cli") {
        absolute.push("cli".to_owned());
        if rest.first().is_some_and(|s| s == "main") {
            return files.iter().find(|f| f.path == "main.rs");
        }
    }
    absolute.extend(rest.iter().cloned());
    (0..=absolute.len())
        .rev()
        .find_map(|n| {
            files.iter().find(|f| {
                // Only the binary's own paths lead to its root.
                f.module == absolute[..n] && (f.path != "main.rs" || binary)
            })
        })
        .filter(|f| f.path != file.path)
}

fn top(file: &SourceFile) -> &str {
    match file.module.first() {
        Some(first) => first,
        None if file.path == "main.rs" => "main",
        None => "lib",
    }
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// Every arrow between two files, from the importing file to the imported one.
fn arrows(files: &[SourceFile]) -> BTreeMap<(String, String), ()> {
    let mut out = BTreeMap::new();
    for file in files {
        for path in paths_in(&file.code) {
            if let Some(to) = resolve(file, &path, files) {
                out.insert((file.path.clone(), to.path.clone()), ());
            }
        }
    }
    out
}

fn is_inside(child: &str, parent: &str) -> bool {
    let Some(dir) = parent.strip_suffix("mod.rs") else {
        return parent == "lib.rs" || parent == "main.rs";
    };
    child.starts_with(dir)
}

/// The circles among `arrows`, each as its files in order (Tarjan's strongly connected
/// components of more than one file).
fn circles(arrows: &BTreeMap<(String, String), ()>) -> Vec<Vec<String>> {
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in arrows.keys() {
        graph.entry(from).or_default().push(to);
        graph.entry(to).or_default();
    }
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(v: &'a str, graph: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in &graph[v] {
            if !s.index.contains_key(w) {
                visit(w, graph, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for &v in graph.keys() {
        if !state.index.contains_key(v) {
            visit(v, &graph, &mut state);
        }
    }
    state.found.sort();
    state.found
}

#[test]
fn arrows_between_modules_only_run_down_and_files_close_no_new_circle() {
    let files = sources();
    assert!(
        files.len() > 50,
        "the source was not found: {}",
        files.len()
    );
    let arrows = arrows(&files);
    let by_path: BTreeMap<&str, &SourceFile> = files.iter().map(|f| (f.path.as_str(), f)).collect();

    let mut upward: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (from, to) in arrows.keys() {
        let (a, b) = (top(by_path[from.as_str()]), top(by_path[to.as_str()]));
        if a == b {
            continue;
        }
        let (Some(la), Some(lb)) = (layer_of(a), layer_of(b)) else {
            continue;
        };
        if lb > la {
            upward
                .entry((a.to_owned(), b.to_owned()))
                .or_default()
                .push(format!("{from} → {to}"));
        }
    }
    let mut problems = Vec::new();
    for ((a, b), at) in &upward {
        if !KNOWN_UPWARD.contains(&(a.as_str(), b.as_str())) {
            problems.push(format!(
                "{a} imports {b}, a layer above it ({} over {}): {}",
                LAYERS[layer_of(b).unwrap()].0,
                LAYERS[layer_of(a).unwrap()].0,
                at.join(", ")
            ));
        }
    }
    for (a, b) in KNOWN_UPWARD {
        if !upward.contains_key(&((*a).to_owned(), (*b).to_owned())) {
            problems.push(format!(
                "{a} no longer imports {b}: take ({a:?}, {b:?}) off KNOWN_UPWARD"
            ));
        }
    }

    let sideways: BTreeMap<(String, String), ()> = arrows
        .into_iter()
        .filter(|((from, to), _)| !is_inside(from, to) && !is_inside(to, from))
        .collect();
    let found = circles(&sideways);
    for circle in &found {
        if !KNOWN_CIRCLES
            .iter()
            .any(|known| known.iter().copied().eq(circle.iter().map(String::as_str)))
        {
            let links: Vec<String> = sideways
                .keys()
                .filter(|(f, t)| circle.contains(f) && circle.contains(t))
                .map(|(f, t)| format!("{f} → {t}"))
                .collect();
            problems.push(format!(
                "a circle between files: {} ({})",
                circle.join(", "),
                links.join(", ")
            ));
        }
    }
    for known in KNOWN_CIRCLES {
        if !found
            .iter()
            .any(|c| known.iter().copied().eq(c.iter().map(String::as_str)))
        {
            problems.push(format!(
                "the circle {known:?} is gone: take it off KNOWN_CIRCLES"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the house rules:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_finds_what_an_import_is_and_nothing_else() {
    let code = plain_code(
        "// crate::ui::App in a comment\nuse crate::ledger::{Entry, decision::{Action, Subject}};\nlet s = \"crate::cli::x\";\nlet t = super::dispatch::queued(1);\n#[cfg(test)]\nmod tests { use crate::ui::x; }\n",
    );
    let paths: Vec<String> = paths_in(&without_tests(&code))
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        vec![
            "crate::ledger::Entry",
            "crate::ledger::decision::Action",
            "crate::ledger::decision::Subject",
            "super::dispatch::queued",
        ]
    );
}

/// Rooms of one job: a source file holds about 1,000 lines at most, a function about
/// 120 (ARCHITECTURE.md). Past that, a file's parts become child modules and a
/// function's steps functions of their own.
const MAX_FILE_LINES: usize = 1_000;
const MAX_FUNCTION_LINES: usize = 120;

/// Files allowed past [`MAX_FILE_LINES`] because they are tables of data, not code.
const DATA_TABLES: &[&str] = &[];

/// The non-test functions of `text` and their lengths in lines, the signature's line
/// to the closing brace's. A function ends at the first line after it that is a `}` at
/// the indentation its `fn` line has, as rustfmt lays every file out; a `#[cfg(test)]`
/// module is skipped whole, the same way.
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let closes = |l: &str, at: usize| l.trim_end() == format!("{}}}", " ".repeat(at));
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines.get(i + 1).is_some_and(|next| {
                next.trim_start().starts_with("mod ") && next.trim_end().ends_with('{')
            })
        {
            let at = indent(lines[i + 1]);
            i += 2;
            while i < lines.len() && !closes(lines[i], at) {
                i += 1;
            }
        } else if let Some(name) = fn_name(trimmed)
            && !line.trim_end().ends_with(';')
        {
            let at = indent(line);
            let start = i;
            while i < lines.len() && !closes(lines[i], at) {
                i += 1;
            }
            found.push((name, start + 1, i - start + 1));
        }
        i += 1;
    }
    found
}

/// The name of the function a line declares, if it declares one.
fn fn_name(trimmed: &str) -> Option<String> {
    let mut rest = trimmed;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    for prefix in ["const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(name[..end].to_owned())
}

#[test]
fn every_file_and_function_is_a_room_of_one_job() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    for file in sources() {
        let text = std::fs::read_to_string(root.join(&file.path)).expect("a source file");
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES && !DATA_TABLES.contains(&file.path.as_str()) {
            problems.push(format!(
                "{} has {lines} lines (at most {MAX_FILE_LINES}): make its parts child modules",
                file.path
            ));
        }
        // A file of tests is the tests' room, held to its topic, not to this.
        if file.path.ends_with("tests.rs") {
            continue;
        }
        for (name, at, length) in function_lengths(&text) {
            if length > MAX_FUNCTION_LINES {
                problems.push(format!(
                    "{}:{at} fn {name} has {length} lines (at most {MAX_FUNCTION_LINES}): make its steps functions",
                    file.path
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "rooms of one job:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_measure_finds_each_function_and_skips_the_tests() {
    let text = "fn short() {\n    one();\n}\n\npub(crate) async fn longer(\n    a: u8,\n) -> u8 {\n    if a > 1 {\n        a\n    } else {\n        0\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    fn in_tests() {\n    }\n}\n\nimpl X {\n    pub fn method(&self) {\n        x();\n    }\n    fn declared(&self);\n}\n";
    assert_eq!(
        function_lengths(text),
        vec![
            ("short".to_owned(), 1, 3),
            ("longer".to_owned(), 5, 9),
            ("method".to_owned(), 22, 3),
        ]
    );
}

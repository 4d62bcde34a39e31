use super::*;

use crate::stores::jsonl::line::{Line, classify_carefully};
use proptest::prelude::*;
use proptest::strategy::ValueTree;

/// Builds ledger lines from a list of choices (0 always the plainest), noting
/// whether the line is one the fast reading must take (`plain`).
struct Maker<'a> {
    choices: &'a [u8],
    at: usize,
    out: Vec<u8>,
    plain: bool,
    /// Whitespace was put between tokens.
    spaced: bool,
    /// No whitespace between tokens, as `JSON.stringify` writes (but for a defect).
    tight: bool,
}

impl Maker<'_> {
    fn pick(&mut self, n: u8) -> u8 {
        let c = self.choices.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        c % n
    }

    /// Now and then (one time in 250): a defect, where the line is to be spoilt.
    fn bad(&mut self) -> bool {
        self.pick(250) == 249
    }

    fn push(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
    }

    fn ws(&mut self) {
        if self.tight && !self.bad() {
            return;
        }
        match self.pick(12) {
            0..=6 => return,
            7 => self.push(" "),
            8 => self.push("\t"),
            9 => self.push("\r\n "),
            10 => self.push(" \t "),
            _ if !self.bad() => self.push(" "),
            _ => {
                // Whitespace to people, not to JSON.parse.
                let odd = ["\u{a0}", "\u{feff}", "\x0b", "\x0c", "\u{2028}"];
                let i = self.pick(odd.len() as u8) as usize;
                self.push(odd[i]);
                self.plain = false;
            }
        }
        self.spaced = true;
    }

    /// A string's contents; `field` for one of the three, where an escape or
    /// U+FDD0 makes the line one for the careful reading.
    fn string(&mut self, field: bool) {
        self.push("\"");
        for _ in 0..self.pick(4) {
            match self.pick(16) {
                0..=3 => {
                    let hex: String = (0..8)
                        .map(|_| char::from(b"0123456789abcdef"[self.pick(16) as usize]))
                        .collect();
                    self.push(&hex);
                }
                4 => self.push("pending"),
                5 => self.push("2026-09-20T08:00:00.000Z"),
                6 => self.push("Jos\u{e9} \u{1f600} \u{2028}"),
                7 => {
                    self.push("\u{fdd0}");
                    if field {
                        self.plain = false;
                    }
                }
                8..=10 => {
                    let escapes = [
                        "\\n",
                        "\\\"",
                        "\\\\",
                        "\\/",
                        "\\u00e9",
                        "\\ud83d",
                        "\\ud83d\\ude00",
                        "\\uDFFF",
                        "\\u0065",
                        "\\b\\f\\r\\t",
                        "\\uFDD0",
                    ];
                    let i = self.pick(escapes.len() as u8) as usize;
                    self.push(escapes[i]);
                    if field {
                        self.plain = false;
                    }
                }
                11 if self.bad() => {
                    let bad = ["\\x", "\\u12", "\\u12g4", "\\", "\\U0041", "\\'"];
                    let i = self.pick(bad.len() as u8) as usize;
                    self.push(bad[i]);
                    self.plain = false;
                }
                12 if self.bad() => {
                    let raw = ["\t", "\x00", "\x1f", "\x7f"];
                    let i = self.pick(raw.len() as u8) as usize;
                    self.push(raw[i]);
                    if i < 3 {
                        self.plain = false;
                    }
                }
                13 if self.bad() => {
                    // Not UTF-8: Node reads a replacement character.
                    let bytes: &[&[u8]] = &[b"\xff", b"\x80", b"\xc3", b"\xed\xa0\x80"];
                    let i = self.pick(bytes.len() as u8) as usize;
                    self.out.extend_from_slice(bytes[i]);
                    self.plain = false;
                }
                _ => self.push("a b"),
            }
        }
        self.push("\"");
    }

    fn number(&mut self) {
        let good = [
            "0",
            "1",
            "-1",
            "1.5",
            "-0.0e-7",
            "1e400",
            "12E+3",
            "123456789012345678901234567890",
        ];
        let bad = [
            "01", "1.", "-", ".5", "1e", "+1", "NaN", "Infinity", "0x1", "1.e3", "--1",
        ];
        if self.bad() {
            let i = self.pick(bad.len() as u8) as usize;
            self.push(bad[i]);
            self.plain = false;
        } else {
            let i = self.pick(good.len() as u8) as usize;
            self.push(good[i]);
        }
    }

    fn value(&mut self, depth: u32) {
        let kinds = if depth > 3 { 4 } else { 7 };
        match self.pick(kinds) {
            0 => self.string(false),
            1 => self.number(),
            2 => {
                let words = ["true", "false", "null", "tru", "nul", "True"];
                let i = if self.bad() {
                    3 + self.pick(3)
                } else {
                    self.pick(3)
                } as usize;
                self.push(words[i]);
                if i > 2 {
                    self.plain = false;
                }
            }
            3 => self.string(false),
            4 | 5 => {
                self.push("{");
                self.ws();
                for i in 0..self.pick(4) {
                    if i > 0 {
                        self.push(",");
                        self.ws();
                    }
                    // Inner fields named like the three are only data.
                    match self.pick(4) {
                        0 => self.push("\"key\""),
                        1 => self.push("\"status\""),
                        _ => self.string(false),
                    }
                    self.ws();
                    self.push(":");
                    self.ws();
                    self.value(depth + 1);
                    self.ws();
                }
                self.close("}");
            }
            _ => {
                self.push("[");
                self.ws();
                for i in 0..self.pick(4) {
                    if i > 0 {
                        self.push(",");
                        self.ws();
                    }
                    self.value(depth + 1);
                    self.ws();
                }
                self.close("]");
            }
        }
    }

    /// Closes an object or array, now and then with a trailing comma.
    fn close(&mut self, bracket: &str) {
        if self.bad() {
            self.push(",");
            self.plain = false;
        }
        self.push(bracket);
    }

    /// An entry as writers make it, fields in any order, now and then one of the
    /// three missing, doubled, misnamed or not a string.
    fn line(&mut self) {
        let mut fields: Vec<u8> = vec![0, 1, 2];
        for _ in 0..self.pick(6) {
            fields.push(3 + self.pick(8));
        }
        // Shuffle by the choices.
        for i in (1..fields.len()).rev() {
            let j = self.pick(i as u8 + 1) as usize;
            fields.swap(i, j);
        }
        let leading = [" ", "\t", "\r", " \t"];
        if self.pick(6) == 5 {
            let i = self.pick(leading.len() as u8) as usize;
            self.push(leading[i]);
            self.spaced = true;
        }
        self.push("{");
        self.ws();
        let mut seen = [0u8; 3];
        for (n, &field) in fields.iter().enumerate() {
            if n > 0 {
                self.push(",");
                self.ws();
            }
            let name = match field {
                0 => "key",
                1 => "status",
                2 => "claimedAt",
                // A second one: the last wins in JSON.parse.
                3 => ["key", "status", "claimedAt"][self.pick(3) as usize],
                4 | 8 => "attempts",
                5 | 9 => "meta",
                6 | 10 => "updatedAt",
                _ => ["k\\u0065y", "Key", "claimed_at", "", "key "][self.pick(5) as usize],
            };
            match name {
                "key" | "status" | "claimedAt" => {
                    let i = ["key", "status", "claimedAt"]
                        .iter()
                        .position(|n| *n == name)
                        .unwrap_or(0);
                    seen[i] += 1;
                    if seen[i] > 1 {
                        self.plain = false;
                    }
                }
                "k\\u0065y" => self.plain = false,
                _ => {}
            }
            self.push("\"");
            self.push(name);
            self.push("\"");
            self.ws();
            self.push(":");
            self.ws();
            match name {
                "status" => match self.pick(16) {
                    0..=9 => self.push("\"sent\""),
                    10 | 11 => self.push("\"pending\""),
                    12 => self.push("\"failed\""),
                    13 => {
                        self.push("\"done\"");
                        self.plain = false;
                    }
                    14 => {
                        self.push("\"se\\u006et\"");
                        self.plain = false;
                    }
                    _ => {
                        self.value(1);
                        self.plain = false;
                    }
                },
                "key" | "claimedAt" => {
                    if self.pick(30) == 29 {
                        // Not a string, or a string with anything in it.
                        self.value(1);
                        self.plain = false;
                    } else {
                        self.string(true);
                    }
                }
                _ => self.value(1),
            }
            self.ws();
        }
        if seen.contains(&0) {
            self.plain = false;
        }
        self.close("}");
        self.ws();
    }

    /// Then, now and then, cut or spoil it.
    fn spoil(&mut self) {
        match self.pick(12) {
            0..=7 => return,
            8 => {
                let at = self.pick(255) as usize % (self.out.len() + 1);
                self.out.truncate(at);
            }
            9 | 10 => {
                let garbage: &[&[u8]] = &[
                    b"\xff",
                    b"\x80",
                    b"\"",
                    b",",
                    b"}",
                    b"\x00",
                    b"\\",
                    b"{",
                    b" ",
                    b"\xef\xbb\xbf",
                ];
                let g = garbage[self.pick(garbage.len() as u8) as usize];
                let at = self.pick(255) as usize % (self.out.len() + 1);
                if self.pick(2) == 0 && at < self.out.len() {
                    self.out.splice(at..at + 1, g.iter().copied());
                } else {
                    self.out.splice(at..at, g.iter().copied());
                }
            }
            _ => {
                let ends = [&b"\xef\xbb\xbf"[..], b"x", b"}", b"[", b"\x00"];
                let e = ends[self.pick(ends.len() as u8) as usize];
                if self.pick(2) == 0 {
                    self.out.splice(0..0, e.iter().copied());
                } else {
                    self.out.extend_from_slice(e);
                }
            }
        }
        self.plain = false;
    }
}

/// A line, and which readings must take it: the token reading every plain one,
/// the compact reading those without whitespace or escapes too.
fn made(choices: &[u8]) -> (Vec<u8>, bool, bool) {
    let mut maker = Maker {
        choices,
        at: 0,
        out: Vec::new(),
        plain: true,
        spaced: false,
        tight: false,
    };
    maker.tight = maker.pick(2) == 0;
    maker.line();
    maker.spoil();
    let compact = maker.plain
        && !maker.spaced
        && !maker.out.contains(&b'\\')
        && maker.out.len() <= COMPACT_WORDS * 64;
    (maker.out, maker.plain, compact)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// Whatever either fast reading takes, the careful reading (serde, then the
    /// JavaScript-exact parser: what every line went through before) reads as the
    /// same entry; and they take every plain line as writers make them.
    #[test]
    fn the_fast_readings_agree_with_the_careful_one(
        choices in proptest::collection::vec(any::<u8>(), 0..400)
    ) {
        let (line, plain, compact) = made(&choices);
        let careful = classify_carefully(&line);
        let text = String::from_utf8_lossy(&line);
        let readings = [
            ("compact", compact_head(&line)),
            ("token", token_head(&line)),
            ("first", entry_head(&line)),
        ];
        for (name, head) in &readings {
            if let Some(head) = head {
                let agreed = matches!(&careful, Line::Entry { key, status, claimed_at, .. }
                    if key.as_ref() == head.key && *status == head.status
                        && claimed_at.as_ref() == head.claimed_at);
                prop_assert!(agreed, "{text:?}: {name} {head:?}, careful {careful:?}");
            }
        }
        if plain {
            prop_assert!(readings[1].1.is_some(), "the token reading left {text:?} ({careful:?})");
        }
        if compact && cfg!(target_arch = "x86_64") {
            prop_assert!(readings[0].1.is_some(), "the compact reading left {text:?} ({careful:?})");
        }
    }
}

/// The generator makes every kind of line: entries each fast reading takes,
/// entries left to the careful reading, and lines that are not entries.
#[test]
fn the_generated_lines_cover_every_kind() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = proptest::collection::vec(any::<u8>(), 0..400);
    let (mut compact, mut token, mut careful_entry, mut not_entry) = (0, 0, 0, 0);
    for _ in 0..5_000 {
        let choices = strategy.new_tree(&mut runner).expect("choices").current();
        let (line, _, _) = made(&choices);
        if compact_head(&line).is_some() {
            compact += 1;
        }
        match (token_head(&line), classify_carefully(&line)) {
            (Some(_), _) => token += 1,
            (None, Line::Entry { .. }) => careful_entry += 1,
            (None, _) => not_entry += 1,
        }
    }
    let counts = format!("{compact} {token} {careful_entry} {not_entry}");
    assert!(
        token > 800 && careful_entry > 1000 && not_entry > 1000,
        "{counts}"
    );
    assert!(compact > 250 || !cfg!(target_arch = "x86_64"), "{counts}");
}

/// The block scans find the same byte as a byte-by-byte look, wherever the special
/// byte is and whatever surrounds it.
#[test]
fn the_block_scans_agree_with_a_byte_by_byte_look() {
    let fillers = [b'a', b' ', 0x7f, 0x80, 0xff, 0x21, 0x5b, 0x5d, 0x1f];
    let specials = [b'"', b'\\', 0x00, 0x09, 0x1f, 0x80, 0xc3, 0xff];
    for len in 0..40 {
        for &fill in &fillers {
            for &special in &specials {
                for place in 0..=len {
                    let mut b = vec![fill; len];
                    if place < len {
                        b[place] = special;
                    }
                    for start in 0..=len.min(3) {
                        for high in [false, true] {
                            let slow = start
                                + b[start..]
                                    .iter()
                                    .position(|&c| is_special(c, high))
                                    .unwrap_or(len - start);
                            assert_eq!(find_special(&b, start, high), slow);
                            let swar = find_special_swar(&b, start, high);
                            let tail = swar
                                + b[swar..]
                                    .iter()
                                    .position(|&c| is_special(c, high))
                                    .unwrap_or(len - swar);
                            assert_eq!(tail, slow, "{b:?} from {start}, high {high}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn reads_the_node_shape() {
    let line = br#"{"key":"5fec","status":"sent","attempts":1,"claimedAt":"2026-09-20T08:00:00.000Z","updatedAt":"2026-09-20T08:00:00.150Z","meta":{"channel":"email","n":[1,-2.5e+3,true,false,null,{}]},"sentAt":"x","providerId":"msg_0"}"#;
    assert_eq!(
        entry_head(line),
        Some(Head {
            key: b"5fec",
            status: Status::Sent,
            claimed_at: b"2026-09-20T08:00:00.000Z"
        })
    );
}

#[test]
fn leaves_what_it_is_not_sure_of() {
    for line in [
        r#"{"key":"k","status":"sent","claimedAt":"x","key":"j"}"#,
        r#"{"k\u0065y":"k","status":"sent","claimedAt":"x"}"#,
        r#"{"key":"k\n","status":"sent","claimedAt":"x"}"#,
        r#"{"key":1,"status":"sent","claimedAt":"x"}"#,
        r#"{"key":"k","status":"done","claimedAt":"x"}"#,
        r#"{"key":"k","status":"sent"}"#,
        r#"{"key":"k","status":"sent","claimedAt":"x",}"#,
        r#"{"key":"k","status":"sent","claimedAt":"x","n":01}"#,
        r#"{"key":"k","status":"sent","claimedAt":"x","n":1.}"#,
        r#"{"key":"k","status":"sent","claimedAt":"x","n":"\x"}"#,
        "{\"key\":\"k\",\"status\":\"sent\",\"claimedAt\":\"x\",\"n\":\"\t\"}",
        "{\"key\":\"\u{fdd0}\",\"status\":\"sent\",\"claimedAt\":\"x\"}",
        "\u{feff}{\"key\":\"k\",\"status\":\"sent\",\"claimedAt\":\"x\"}",
        "{\"key\":\"k\",\"status\":\"sent\",\"claimedAt\":\"x\"}\u{a0}",
    ] {
        assert_eq!(entry_head(line.as_bytes()), None, "{line}");
    }
    assert_eq!(
        entry_head(b"{\"key\":\"k\",\"status\":\"sent\",\"claimedAt\":\"x\",\"n\":\"\xff\"}"),
        None
    );
}

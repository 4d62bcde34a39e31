use super::*;

#[test]
fn a_key_has_one_spelling() {
    let hex = "3163254257af51b78b95ad0315aa253439b9023a314f742ac23cc511d7eb4ae8";
    assert_eq!(check_key(hex), Ok(()));
    assert_eq!(check_key("loop-morning-brief-2026-09-17"), Ok(()));
    assert_eq!(
        check_key(&hex.to_ascii_uppercase()),
        Err(BadKey::UpperCaseHex(hex.into()))
    );
    assert_eq!(check_key(""), Err(BadKey::Empty));
    assert_eq!(check_key("   "), Err(BadKey::Blank));
    assert_eq!(check_key(" k"), Err(BadKey::PaddedWithSpace));
    assert_eq!(check_key("k\u{feff}"), Err(BadKey::PaddedWithSpace));
    assert_eq!(check_key("a\u{200b}b"), Err(BadKey::Hidden(0x200b)));
    assert_eq!(check_key("a\u{1b}b"), Err(BadKey::Hidden(0x1b)));
    assert_eq!(check_key(&"k".repeat(513)), Err(BadKey::TooLong(513)));
    assert_eq!(check_key(&"k".repeat(512)), Ok(()));
    // Upper-case op ids are not hex keys, and stay valid.
    assert_eq!(check_key("ORDER-1042"), Ok(()));
    // Characters that draw as nothing, or as a space, are second spellings too.
    for hidden in [
        '\u{34f}',
        '\u{3164}',
        '\u{fe0f}',
        '\u{e0041}',
        '\u{206a}',
        '\u{2800}',
    ] {
        assert!(
            matches!(check_key(&format!("inv{hidden}-1")), Err(BadKey::Hidden(_))),
            "{hidden:?}"
        );
    }
    assert_eq!(check_key("inv\u{a0}1"), Err(BadKey::OddSpace(0xa0)));
    assert_eq!(check_key("cafe\u{301}"), Err(BadKey::NotNfc));
    assert_eq!(check_key("caf\u{e9} order"), Ok(()));
    // Look-alikes of ASCII, beside a pending `existing` or `inv-1` (H4).
    assert_eq!(
        check_key("\u{435}xisting"),
        Err(BadKey::LookAlike(0x435, "e".into()))
    );
    assert_eq!(
        check_key("\u{ff45}\u{ff58}isting"),
        Err(BadKey::LookAlike(0xff45, "e".into()))
    );
    assert_eq!(
        check_key("inv\u{2013}1"),
        Err(BadKey::LookAlike(0x2013, "-".into()))
    );
}

/// H4: the spellings of a pending send's fields that made a second key, each
/// refused naming the character and where it is; and fields that are words of
/// their own, taken.
#[test]
fn a_derived_key_has_one_spelling() {
    let fields = |to: &str, intent: &str, channel: &str| {
        check_key_fields(channel, to, intent, None).map_err(|e| e.to_string())
    };
    let refused = [
        (
            ("ana@example.com\u{200b}", "invoice:1042", "email"),
            "to: U+200B at character 16 is a control",
        ),
        (
            ("ana@example.com", "invoice\u{200b}:1042", "email"),
            "intent: U+200B at character 8 is a control",
        ),
        (
            ("ana@example.com", "invoice:1042", "em\u{200b}ail"),
            "channel: U+200B at character 3 is a control",
        ),
        (
            ("\u{202e}ana@example.com", "invoice:1042", "email"),
            "to: U+202E at character 1 is a control",
        ),
        (
            ("ana@example.com", "in\u{ad}voice:1042", "email"),
            "intent: U+00AD at character 3 is a control",
        ),
        (
            ("\u{430}na@example.com", "invoice:1042", "email"),
            "to: U+0430 at character 1 looks like \"a\"",
        ),
        (
            (
                "\u{ff41}\u{ff4e}\u{ff41}@example.com",
                "invoice:1042",
                "email",
            ),
            "to: U+FF41 at character 1 looks like \"a\"",
        ),
        (
            ("ana@example.com", "invoice\u{a0}1042", "email"),
            "intent: U+00A0 at character 8 is a space that is not a plain space",
        ),
        (
            ("ana@ex\u{430}mple.com", "invoice:1042", "email"),
            "to: U+0430 at character 7 looks like \"a\"",
        ),
    ];
    // The hostile retest's second round: format characters outside the
    // default-ignorable set, enclosing marks, and punctuation that looks like
    // ASCII punctuation beside ASCII text.
    let hidden = [
        '\u{fff9}',
        '\u{fffb}',
        '\u{600}',
        '\u{605}',
        '\u{6dd}',
        '\u{70f}',
        '\u{890}',
        '\u{8e2}',
        '\u{110bd}',
        '\u{110cd}',
        '\u{13430}',
        '\u{20dd}',
        '\u{20e4}',
        '\u{488}',
        '\u{a670}',
        '\u{1abe}',
        '\u{1d159}',
        '\u{e000}',
    ];
    for c in hidden {
        let said = fields("ana@example.com", &format!("invoice{c}:1042"), "email")
            .expect_err(&format!("U+{:04X}", u32::from(c)));
        assert!(
            said.starts_with(&format!(
                "intent: U+{:04X} at character 8 is a control",
                u32::from(c)
            )),
            "{said}"
        );
        assert_eq!(
            check_key(&format!("k{c}")),
            Err(BadKey::Hidden(u32::from(c)))
        );
    }
    for (to, intent, wanted) in [
        (
            "ana@example.com",
            "invoice\u{2236}1",
            "intent: U+2236 at character 8 looks like \":\"",
        ),
        (
            "ana@example.com",
            "invoice\u{a789}1",
            "intent: U+A789 at character 8 looks like \":\"",
        ),
        (
            "ana@example\u{3002}com",
            "invoice:1",
            "to: U+3002 at character 12 looks like \".\"",
        ),
        (
            "ana@example.com",
            "don\u{2019}t forget",
            "intent: U+2019 at character 4 looks like \"'\"",
        ),
        (
            "ana@example.com",
            "send \u{201c}welcome\u{201d}",
            "intent: U+201C at character 6 looks like \"''\"",
        ),
        (
            "ana@example.com",
            "invoice \u{2014} december",
            "intent: U+2014 at character 9 looks like \"-\"",
        ),
    ] {
        let said = fields(to, intent, "email").expect_err(intent);
        assert!(said.starts_with(wanted), "{to:?} {intent:?}: {said}");
    }
    // The third retest: look-alikes of any script beside ASCII, marks on ASCII,
    // punycode, and URLs spelled another way than their plain form.
    for (to, intent, wanted) in [
        (
            "ana@example.com",
            "invoi\u{1d04}e:1042",
            "intent: U+1D04 at character 6 looks like \"c\"",
        ),
        (
            "ana@example.com",
            "\u{131}nvoice:1042",
            "intent: U+0131 at character 1 looks like \"i\"",
        ),
        (
            "ana@example.com",
            "invoice:\u{7c0}042",
            "intent: U+07C0 at character 9 looks like \"O\"",
        ),
        (
            "ana@example.com",
            "invoice:1042\u{307}",
            "intent: U+0307 at character 13 is a mark drawn on '2'",
        ),
        (
            "\u{1d00}na@example.com",
            "invoice:1",
            "to: U+1D00 at character 1 looks like \"a\"",
        ),
        (
            "\u{251}na@example.com",
            "invoice:1",
            "to: U+0251 at character 1 looks like \"a\"",
        ),
        (
            "ana@xn--bcher-kva.de",
            "invoice:7",
            "to: the domain label \"xn--bcher-kva\" is the ASCII (punycode) form",
        ),
        (
            "HTTPS://HOOKS.EXAMPLE.COM/x",
            "paid:9",
            "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com:443/x",
            "paid:9",
            "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com./x",
            "paid:9",
            "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com/x#",
            "paid:9",
            "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com/x?",
            "paid:9",
            "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com/./%78",
            "paid:9",
            "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
        ),
    ] {
        let said = fields(to, intent, "webhook").expect_err(intent);
        assert!(said.starts_with(wanted), "{to:?} {intent:?}: {said}");
    }
    // The fourth retest's spellings of one URL or phone (N4).
    for (to, wanted) in [
        (
            "https://xn--bcher-kva.de/x",
            "the domain label \"xn--bcher-kva\"",
        ),
        ("https://bÜcher.de/x", "\"https://bücher.de/x\""),
        (
            "https://@hooks.example.com/x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com:0443/x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com/a/../x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https:hooks.example.com/x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https:/hooks.example.com/x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks%2eexample.com/x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com\\x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https://hooks.example.com/\u{e9}",
            "\"https://hooks.example.com/%C3%A9\"",
        ),
        (
            "https://hooks.example.com",
            "\"https://hooks.example.com/\"",
        ),
        ("https://[0:0:0:0:0:0:0:1]/x", "\"https://[::1]/x\""),
        ("https://0x5db8d822/x", "\"https://93.184.216.34/x\""),
        ("https://1572395042/x", "\"https://93.184.216.34/x\""),
        ("+44 (0)20 7946 0958", "\"+442079460958\""),
        ("+442079460958,", "\"+442079460958\""),
        ("+44/20/7946/0958", "\"+442079460958\""),
        ("+44_20_7946_0958", "\"+442079460958\""),
    ] {
        let said = fields(to, "paid:9", "webhook").expect_err(to);
        assert!(said.contains(wanted), "{to:?}: {said}");
    }
    // The sixth retest's (P1).
    for (to, wanted) in [
        (
            "+\u{664}\u{664} 20 7946 0958",
            "U+0664 at character 2 is a digit of another script",
        ),
        (
            "+44 \u{968}\u{966} 7946 0958",
            "U+0968 at character 5 is a digit of another script",
        ),
        ("(+44) 20 7946 0958", "\"+442079460958\""),
    ] {
        let said = fields(to, "paid:9", "sms").expect_err(to);
        assert!(said.contains(wanted), "{to:?}: {said}");
    }
    // The fifth retest's (M4).
    for (to, wanted) in [
        (
            "https://hooks.example.com/a b",
            "\"https://hooks.example.com/a%20b\"",
        ),
        (
            "https://hooks.example.com/{x}",
            "\"https://hooks.example.com/%7Bx%7D\"",
        ),
        (
            "https://hooks.example.com/x?a=b c",
            "\"https://hooks.example.com/x?a=b%20c\"",
        ),
        (
            "https://user@hooks.example.com/x",
            "\"https://hooks.example.com/x\"",
        ),
        (
            "https://u:p@hooks.example.com/x",
            "\"https://hooks.example.com/x\"",
        ),
    ] {
        let said = fields(to, "paid:9", "webhook").expect_err(to);
        assert!(said.contains(wanted), "{to:?}: {said}");
    }
    // Taken: words of another script, accents, plain URLs with what they need.
    for (to, intent) in [
        ("ana@b\u{fc}cher.de", "invoice:7"),
        ("ana@example.com", "\u{441}\u{447}\u{451}\u{442}:7"),
        ("ana@example.com", "D\u{e1}na"),
        ("https://hooks.example.com:8443/x?a=%2F#", "paid:9"),
        ("https://[::1]:8443/hook", "paid:9"),
        ("https://93.184.216.34/x", "paid:9"),
        ("https://hooks.example.com/", "paid:9"),
        ("+44 20 7946 0958", "paid:9"),
        ("slack:C024BE91L", "paid:9"),
        ("https://hooks.example.com/p%2Fq", "paid:9"),
    ] {
        let taken = fields(to, intent, "webhook");
        if to.contains('#') {
            assert!(taken.is_err(), "{to:?}: a fragment is refused");
        } else {
            assert_eq!(taken, Ok(()), "{to:?} {intent:?}");
        }
    }
    for (to, bare) in [
        ("Ana Lopez <ana@example.com>", "ana@example.com"),
        ("Ana<ana@example.com>", "ana@example.com"),
        ("ana@example.com (Ana)", "ana@example.com"),
        ("\"ana@example.com\"", "ana@example.com"),
        ("'ana@example.com'", "ana@example.com"),
        ("ana@example.com,", "ana@example.com"),
        ("ana@example.com;", "ana@example.com"),
        ("ana@example.com>", "ana@example.com"),
        ("mailto://ana@example.com", "ana@example.com"),
        ("To: ana@example.com", "ana@example.com"),
        ("to:ana@example.com", "ana@example.com"),
        ("ana%40example.com", "ana@example.com"),
        ("ana@example.com?subject=x", "ana@example.com"),
        ("ana @example.com", "ana@example.com"),
        ("ana@ example.com", "ana@example.com"),
        ("ana@example.com:", "ana@example.com"),
        ("ana@example.com/", "ana@example.com"),
        ("<ana@example.com>", "ana@example.com"),
        ("mailto:ana@example.com", "ana@example.com"),
        ("MAILTO:Ana@Example.com", "Ana@Example.com"),
        ("ana@example.com.", "ana@example.com"),
        ("tel:+15550100199", "+15550100199"),
    ] {
        let said = fields(to, "invoice:1", "email").expect_err(to);
        assert!(
            said.starts_with(&format!("to: give the recipient alone, {bare:?}")),
            "{said}"
        );
    }
    for to in [
        "https://hooks.example.com/x/?a=1",
        "https://hooks.example.com/x/",
    ] {
        assert_eq!(fields(to, "invoice:1", "webhook"), Ok(()), "{to}");
    }
    for to in [
        "15551234567",
        "5551234567",
        "(555) 123-4567",
        "001 555 123 4567",
    ] {
        let said = fields(to, "otp:1", "sms").expect_err(to);
        assert!(said.starts_with("to: a phone number without +"), "{said}");
    }
    for to in [
        "https://hooks.example.com/x",
        "U024BE7LH",
        "#ops",
        "ana@example.com",
        "+1 555 123 4567",
        "+15551234567",
        "12345",
    ] {
        assert_eq!(fields(to, "invoice:1", "email"), Ok(()), "{to}");
    }
    for dash in [
        '\u{2013}', '\u{2014}', '\u{2212}', '\u{2010}', '\u{2011}', '\u{2012}',
    ] {
        let window = format!("2026{dash}12");
        let said = check_key_fields("email", "a@b.co", "x", Some(&window))
            .expect_err(&window)
            .to_string();
        assert!(
            said.starts_with(&format!(
                "window: U+{:04X} at character 5 looks like \"-\"",
                u32::from(dash)
            )),
            "{said}"
        );
        assert!(
            matches!(check_key(&window), Err(BadKey::LookAlike(..))),
            "{window}"
        );
    }
    for ((to, intent, channel), wanted) in refused {
        let said = fields(to, intent, channel).expect_err(to);
        assert!(
            said.starts_with(wanted),
            "{to:?} {intent:?} {channel:?}: {said}"
        );
    }
    for (to, intent, channel) in [
        ("  Ana@Example.com\t", " invoice:1042 ", " EMAIL"),
        ("\u{a0}ana@example.com\u{feff}", "invoice:1042", "email"),
        ("D\u{e1}na@example.com", "caf\u{e9}", "email"),
        (
            "\u{39f}\u{394}\u{3a5}\u{3a3}\u{3a3}\u{395}\u{3a5}\u{3a3}@example.gr",
            "invoice:\u{441}\u{447}\u{451}\u{442}",
            "email",
        ),
        (
            "Stra\u{df}e.\u{1e9e}@example.de",
            "\u{1f389} welcome",
            "\u{130}m",
        ),
        ("+1 555 010 0199", "don't forget", "sms"),
        // A sentence of another script keeps its own punctuation.
        ("ana@example.com", "\u{53d1}\u{7968}\u{3002}", "email"),
        ("ana@example.com", "\u{00ab}Bonjour\u{00bb}", "email"),
    ] {
        assert_eq!(
            fields(to, intent, channel),
            Ok(()),
            "{to:?} {intent:?} {channel:?}"
        );
    }
    assert_eq!(
        check_key_fields("email", "a@b.co", "x", Some("week\u{200b}38")).map_err(|e| e.field),
        Err("window")
    );
}

/// `to` as an SMS's recipient is refused, naming `plain` as the number to give.
fn refused_naming_the_number(to: &str, plain: &str) {
    let said = check_key_fields("sms", to, "otp:1", None)
        .map_err(|e| e.to_string())
        .expect_err(to);
    assert!(
        said.contains(&format!("give the phone number as {plain:?}")),
        "{to:?}: {said}"
    );
}

/// AL2 of hostile round 44: a trunk 0 after a country code written apart, and an
/// extension, made a second key for one phone; both are refused, naming what to give.
/// Where the 0 is the number's own (Italy's `+39 06 …`), and where the code is
/// written together with the rest, the number is taken as written.
#[test]
fn a_trunk_zero_after_the_country_code_or_an_extension_is_refused() {
    for (to, plain) in [
        ("+44 07700 900123", "+447700900123"),
        ("+44-0 7700 900123", "+447700900123"),
        ("+33 0 1 23 45 67 89", "+33123456789"),
        ("+49 030 1234567", "+49301234567"),
    ] {
        refused_naming_the_number(to, plain);
    }
    for (to, plain, extension) in [
        ("+1 555 010 0100;ext=12", "+15550100100", "12"),
        ("+15550100100;ext=12", "+15550100100", "12"),
        ("+1 (555) 010-0100 x12", "+15550100100", "12"),
        ("+1 555 010 0100 ext. 12", "+15550100100", "12"),
        ("+1 555 010 0100#12", "+15550100100", "12"),
    ] {
        let said = check_key_fields("call", to, "otp:1", None)
            .map_err(|e| e.to_string())
            .expect_err(to);
        assert!(
            said.contains(&format!(
                "give the phone number alone, {plain:?}, and its extension {extension} in the intent"
            )),
            "{to:?}: {said}"
        );
    }
    for to in [
        "+39 06 6982 1234",
        "+225 07 12 34 56 78",
        "+447700900123",
        "+44 7700 900123",
    ] {
        assert_eq!(
            check_key_fields("sms", to, "otp:1", None).map_err(|e| e.to_string()),
            Ok(()),
            "{to:?}"
        );
    }
}

/// P1 of the thirteenth retest: an exit prefix after the `+` is refused, naming the
/// number in E.164.
#[test]
fn an_exit_prefix_after_the_plus_is_refused_naming_the_number() {
    for (to, plain) in [
        ("+00 1 415 555 0100", "+14155550100"),
        ("+0014155550100", "+14155550100"),
        ("+0 1 415 555 0100", "+14155550100"),
        ("+0044 20 7946 0958", "+442079460958"),
        ("+011 44 20 7946 0958", "+442079460958"),
    ] {
        refused_naming_the_number(to, plain);
    }
    assert_eq!(
        check_key_fields("sms", "+1 415 555 0100", "otp:1", None).map_err(|e| e.to_string()),
        Ok(())
    );
}

/// L3 of the eighth retest: quotes round a local part that needs none, or one left
/// in it, are refused naming the address without them.
#[test]
fn quotes_in_a_plain_local_part_name_the_address_without_them() {
    for to in [
        "\"info\"@example.com",
        "info\"@example.com",
        "in\"fo@example.com",
    ] {
        let said = check_key_fields("email", to, "invoice:1", None)
            .map_err(|e| e.to_string())
            .expect_err(to);
        assert!(
            said.contains("give the recipient alone, \"info@example.com\""),
            "{to:?}: {said}"
        );
    }
}

/// I2 of the eighth retest: a non-ASCII host written in percent escapes is refused,
/// naming the host it is (which the IDNA check then holds to its plain form).
#[test]
fn a_url_host_in_percent_escapes_is_refused_naming_the_host_it_is() {
    for (to, plain) in [
        ("https://b%c3%bccher.de/hook", "https://b\u{fc}cher.de/hook"),
        ("https://b%C3%BCcher.de/hook", "https://b\u{fc}cher.de/hook"),
        ("https://b%c3%9ccher.de/hook", "https://b\u{fc}cher.de/hook"),
        (
            "https://%e4%be%8b%e5%ad%90.%e4%b8%ad%e5%9b%bd/hook",
            "https://\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}/hook",
        ),
    ] {
        let said = check_key_fields("webhook", to, "invoice:1", None)
            .map_err(|e| e.to_string())
            .expect_err(to);
        assert!(
            said.contains(&format!("give the URL in its plain form, {plain:?}")),
            "{to:?}: {said}"
        );
    }
    // Named in the plain form IDNA gives, in one step (I3).
    for (to, plain) in [
        (
            "https://\u{4f8b}\u{5b50}%e3%80%82\u{4e2d}\u{56fd}/hook",
            "https://\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}/hook",
        ),
        (
            "https://bu%cc%88cher.de/hook",
            "https://b\u{fc}cher.de/hook",
        ),
    ] {
        let said = check_key_fields("webhook", to, "invoice:1", None)
            .map_err(|e| e.to_string())
            .expect_err(to);
        assert!(
            said.contains(&format!("give the URL in its plain form, {plain:?}")),
            "{to:?}: {said}"
        );
    }
}

/// I1 of the seventh retest: a host IDNA maps to another spelling (label dots of
/// other scripts, half-width katakana) is refused, naming the plain form; the plain
/// form itself, and a host IDNA keeps as it is (`ß`), are taken.
#[test]
fn a_host_spelled_otherwise_than_idna_maps_it_is_refused_naming_its_plain_form() {
    let fields = |to: &str, intent: &str, channel: &str| {
        check_key_fields(channel, to, intent, None).map_err(|e| e.to_string())
    };
    for (to, plain) in [
        (
            "info@\u{4f8b}\u{5b50}\u{3002}\u{4e2d}\u{56fd}",
            "\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
        ),
        (
            "info@\u{4f8b}\u{5b50}\u{ff61}\u{4e2d}\u{56fd}",
            "\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
        ),
        (
            "info@\u{ff77}\u{ff6c}\u{ff89}\u{ff9d}.jp",
            "\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp",
        ),
        (
            "https://\u{4f8b}\u{5b50}\u{3002}\u{4e2d}\u{56fd}/hook",
            "\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
        ),
        (
            "https://\u{ff77}\u{ff6c}\u{ff89}\u{ff9d}.jp/hook",
            "\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp",
        ),
    ] {
        let said = fields(to, "invoice:1", "email").expect_err(to);
        assert!(
            said.starts_with(&format!("to: give the host as {plain:?}, its plain form")),
            "{to:?}: {said}"
        );
    }
    for to in [
        "info@\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
        "info@\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp",
        "https://\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp/hook",
        "info@stra\u{df}e.de",
        "info@B\u{dc}CHER.DE",
    ] {
        assert_eq!(fields(to, "invoice:1", "email"), Ok(()), "{to:?}");
    }
}

#[test]
fn window_number_and_text_agree() {
    let seven = send_key("email", "a@b.co", "x", Some(&Window::Number(7.0)));
    assert_eq!(
        seven,
        send_key("email", "a@b.co", "x", Some(&Window::Text(" 7 ".into())))
    );
    assert_eq!(
        send_key_preimage("email", "a@b.co", "x", Some(&Window::Number(-0.0))).unwrap(),
        r#"["send-once:v1","email","a@b.co","x","0"]"#
    );
}

#[test]
fn non_finite_and_blank_windows_are_refused() {
    for w in [
        Window::Number(f64::NAN),
        Window::Number(f64::INFINITY),
        Window::Text("\u{feff} ".into()),
    ] {
        assert_eq!(
            send_key("email", "a@b.co", "x", Some(&w)),
            Err(KeyError::BadWindow)
        );
    }
}

#[test]
fn phone_pattern_needs_a_body() {
    assert_eq!(normalise_recipient("+"), "+");
    assert_eq!(normalise_recipient("+ 1234567"), "+1234567");
    assert_eq!(normalise_recipient("++1234567"), "++1234567");
}

#[test]
fn js_whitespace_set() {
    assert!(is_js_whitespace('\u{feff}'));
    assert!(!is_js_whitespace('\u{85}'));
    assert!(!is_js_whitespace('\u{180e}'));
    assert!(!is_js_whitespace('\u{200b}'));
    assert_eq!(js_trim("\u{3000}\u{2029}a b\u{a0}"), "a b");
}

//! One table of keys: what each does, where, how it is labelled and what it is called
//! on the `:` command line. The footer hints, the help overlay, the command line's
//! completion and the key routing are all drawn from it, so they cannot drift apart.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum View {
    Approvals,
    Unknown,
    Ledger,
    Decisions,
}

impl View {
    pub const ALL: [View; 4] = [
        View::Approvals,
        View::Unknown,
        View::Ledger,
        View::Decisions,
    ];

    pub fn title(self) -> &'static str {
        match self {
            View::Approvals => "Approvals",
            View::Unknown => "Unknown sends",
            View::Ledger => "Ledger",
            View::Decisions => "Decisions",
        }
    }

    /// The name `--view` and the command line know it by.
    pub fn name(self) -> &'static str {
        match self {
            View::Approvals => "approvals",
            View::Unknown => "unknown",
            View::Ledger => "ledger",
            View::Decisions => "decisions",
        }
    }

    pub fn from_name(name: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.name() == name)
    }

    pub fn index(self) -> usize {
        View::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }

    pub fn next(self) -> View {
        View::ALL[(self.index() + 1) % View::ALL.len()]
    }

    pub fn previous(self) -> View {
        View::ALL[(self.index() + View::ALL.len() - 1) % View::ALL.len()]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Quit,
    NextView,
    PreviousView,
    Show(View),
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Help,
    Filter,
    /// Clears the marks, else the filter.
    Back,
    Approve,
    Reject,
    Recheck,
    /// Edit the selected draft's payload in `$EDITOR`, into a new revision (an edit
    /// kept from a try that was not saved, when there is one).
    Edit,
    /// Edit from the draft's payload as it is, dropping a kept edit.
    EditFresh,
    MarkSent,
    MarkFailed,
    /// Ask the verify command about the selected or marked unknown sends.
    Verify,
    /// Open the settle form a verify answer calls for ("happened": sent, prefilled).
    SettleVerified,
    CycleStatus,
    ScrollDetailDown,
    ScrollDetailUp,
    ToggleMark,
    MarkAll,
    Sort,
    Copy,
    Page,
    OlderDiffBase,
    NewerDiffBase,
    CommandLine,
}

pub struct Binding {
    pub keys: &'static [(KeyCode, KeyModifiers)],
    /// How the keys are written in the help: "j/↓", "PgDn/C-d".
    pub key_label: &'static str,
    pub command: Command,
    pub label: &'static str,
    /// Its name on the `:` command line.
    pub name: &'static str,
    pub group: &'static str,
    /// The views it works in; empty means every view.
    pub views: &'static [View],
    /// The footer's short form, when it is shown there: ("j/k", "move").
    pub hint: Option<(&'static str, &'static str)>,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[(KeyCode::Char('a'), NONE)],
        key_label: "a",
        command: Command::Approve,
        label: "approve the draft",
        name: "approve",
        group: "Decide",
        views: &[View::Approvals],
        hint: Some(("a", "approve")),
    },
    Binding {
        keys: &[(KeyCode::Char('r'), NONE)],
        key_label: "r",
        command: Command::Reject,
        label: "reject",
        name: "reject",
        group: "Decide",
        views: &[View::Approvals],
        hint: Some(("r", "reject")),
    },
    Binding {
        keys: &[(KeyCode::Char('c'), NONE)],
        key_label: "c",
        command: Command::Recheck,
        label: "recheck the facts",
        name: "recheck",
        group: "Decide",
        views: &[View::Approvals],
        hint: Some(("c", "recheck")),
    },
    Binding {
        keys: &[(KeyCode::Char('e'), NONE)],
        key_label: "e",
        command: Command::Edit,
        label: "edit in $EDITOR",
        name: "edit",
        group: "Decide",
        views: &[View::Approvals],
        hint: Some(("e", "edit")),
    },
    Binding {
        keys: &[(KeyCode::Char('E'), SHIFT), (KeyCode::Char('E'), NONE)],
        key_label: "E",
        command: Command::EditFresh,
        label: "edit anew, drop kept",
        name: "edit-afresh",
        group: "Decide",
        views: &[View::Approvals],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('s'), NONE)],
        key_label: "s",
        command: Command::MarkSent,
        label: "mark sent",
        name: "mark-sent",
        group: "Decide",
        // In the Ledger view too: a send someone marked failed that the provider has
        // is recorded sent there, so the next run does not send it again (K2).
        views: &[View::Unknown, View::Ledger],
        hint: Some(("s", "sent")),
    },
    Binding {
        keys: &[(KeyCode::Char('f'), NONE)],
        key_label: "f",
        command: Command::MarkFailed,
        label: "mark failed",
        name: "mark-failed",
        group: "Decide",
        views: &[View::Unknown],
        hint: Some(("f", "failed")),
    },
    Binding {
        keys: &[(KeyCode::Char('v'), NONE)],
        key_label: "v",
        command: Command::Verify,
        label: "verify with provider",
        name: "verify",
        group: "Decide",
        views: &[View::Unknown],
        hint: Some(("v", "verify")),
    },
    Binding {
        keys: &[(KeyCode::Enter, NONE)],
        key_label: "Enter",
        command: Command::SettleVerified,
        label: "settle as verify said",
        name: "settle-verified",
        group: "Decide",
        views: &[View::Unknown],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char(' '), NONE)],
        key_label: "Space",
        command: Command::ToggleMark,
        label: "mark row, move down",
        name: "mark",
        group: "Marks",
        views: &[View::Approvals, View::Unknown],
        hint: Some(("Space", "mark")),
    },
    Binding {
        keys: &[(KeyCode::Char('a'), CTRL)],
        key_label: "C-a",
        command: Command::MarkAll,
        label: "mark every row shown",
        name: "mark-all",
        group: "Marks",
        views: &[View::Approvals, View::Unknown],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Esc, NONE)],
        key_label: "Esc",
        command: Command::Back,
        label: "clear marks, filter",
        name: "clear",
        group: "Marks",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('/'), NONE)],
        key_label: "/",
        command: Command::Filter,
        label: "filter as you type",
        name: "filter",
        group: "Find",
        views: &[],
        hint: Some(("/", "filter")),
    },
    Binding {
        keys: &[(KeyCode::Char('S'), SHIFT), (KeyCode::Char('S'), NONE)],
        key_label: "S",
        command: Command::Sort,
        label: "cycle the sort",
        name: "sort",
        group: "Find",
        views: &[View::Approvals, View::Unknown],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('t'), NONE)],
        key_label: "t",
        command: Command::CycleStatus,
        label: "cycle status filter",
        name: "status",
        group: "Find",
        views: &[View::Ledger],
        hint: Some(("t", "status")),
    },
    Binding {
        keys: &[(KeyCode::Char('o'), NONE)],
        key_label: "o",
        command: Command::Page,
        label: "open in $PAGER",
        name: "open",
        group: "Read",
        views: &[View::Approvals, View::Unknown, View::Ledger],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('['), NONE)],
        key_label: "[",
        command: Command::OlderDiffBase,
        label: "older diff base",
        name: "diff-older",
        group: "Read",
        views: &[View::Approvals],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char(']'), NONE)],
        key_label: "]",
        command: Command::NewerDiffBase,
        label: "newer diff base",
        name: "diff-newer",
        group: "Read",
        views: &[View::Approvals],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('y'), NONE)],
        key_label: "y",
        command: Command::Copy,
        label: "copy key or id",
        name: "copy",
        group: "Read",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('J'), SHIFT), (KeyCode::Char('J'), NONE)],
        key_label: "J",
        command: Command::ScrollDetailDown,
        label: "scroll details down",
        name: "details-down",
        group: "Read",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('K'), SHIFT), (KeyCode::Char('K'), NONE)],
        key_label: "K",
        command: Command::ScrollDetailUp,
        label: "scroll details up",
        name: "details-up",
        group: "Read",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('j'), NONE), (KeyCode::Down, NONE)],
        key_label: "j/↓",
        command: Command::Down,
        label: "down",
        name: "down",
        group: "Move",
        views: &[],
        hint: Some(("j/k", "move")),
    },
    Binding {
        keys: &[(KeyCode::Char('k'), NONE), (KeyCode::Up, NONE)],
        key_label: "k/↑",
        command: Command::Up,
        label: "up",
        name: "up",
        group: "Move",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::PageDown, NONE), (KeyCode::Char('d'), CTRL)],
        key_label: "PgDn/C-d",
        command: Command::PageDown,
        label: "page down",
        name: "page-down",
        group: "Move",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::PageUp, NONE), (KeyCode::Char('u'), CTRL)],
        key_label: "PgUp/C-u",
        command: Command::PageUp,
        label: "page up",
        name: "page-up",
        group: "Move",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('g'), NONE), (KeyCode::Home, NONE)],
        key_label: "g/Home",
        command: Command::Top,
        label: "first row",
        name: "first",
        group: "Move",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[
            (KeyCode::Char('G'), SHIFT),
            (KeyCode::Char('G'), NONE),
            (KeyCode::End, NONE),
        ],
        key_label: "G/End",
        command: Command::Bottom,
        label: "last row",
        name: "last",
        group: "Move",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Tab, NONE)],
        key_label: "Tab",
        command: Command::NextView,
        label: "next view",
        name: "next-view",
        group: "Views",
        views: &[],
        hint: Some(("Tab", "view")),
    },
    Binding {
        keys: &[(KeyCode::BackTab, SHIFT), (KeyCode::BackTab, NONE)],
        key_label: "S-Tab",
        command: Command::PreviousView,
        label: "previous view",
        name: "previous-view",
        group: "Views",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('1'), NONE)],
        key_label: "1",
        command: Command::Show(View::Approvals),
        label: "approvals",
        name: "approvals",
        group: "Views",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('2'), NONE)],
        key_label: "2",
        command: Command::Show(View::Unknown),
        label: "unknown sends",
        name: "unknown",
        group: "Views",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('3'), NONE)],
        key_label: "3",
        command: Command::Show(View::Ledger),
        label: "ledger",
        name: "ledger",
        group: "Views",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char('4'), NONE)],
        key_label: "4",
        command: Command::Show(View::Decisions),
        label: "decisions",
        name: "decisions",
        group: "Views",
        views: &[],
        hint: None,
    },
    Binding {
        keys: &[(KeyCode::Char(':'), NONE), (KeyCode::Char(':'), SHIFT)],
        key_label: ":",
        command: Command::CommandLine,
        label: "command by name",
        name: "command",
        group: "Other",
        views: &[],
        hint: Some((":", "cmd")),
    },
    Binding {
        keys: &[(KeyCode::Char('?'), NONE), (KeyCode::Char('?'), SHIFT)],
        key_label: "?",
        command: Command::Help,
        label: "help",
        name: "help",
        group: "Other",
        views: &[],
        hint: Some(("?", "help")),
    },
    Binding {
        keys: &[(KeyCode::Char('q'), NONE), (KeyCode::Char('c'), CTRL)],
        key_label: "q/C-c",
        command: Command::Quit,
        label: "quit",
        name: "quit",
        group: "Other",
        views: &[],
        hint: Some(("q", "quit")),
    },
];

/// What the mouse does, for the help overlay (it is not a key, so not a binding).
pub const MOUSE_HELP: &[(&str, &str)] =
    &[("click", "select a row"), ("wheel", "scroll pane under it")];

/// The keys of an open overlay, for its own hint line and the help.
pub const FORM_KEYS: &str = "Enter submit · Tab/↓ next field · S-Tab/↑ previous · Esc cancel";
pub const CONFIRM_KEYS: &str = "Enter/y confirm · Esc/n cancel";
pub const CONFIRM_KEYS_STRICT: &str = "y confirm · Esc/n cancel";
pub const FILTER_KEYS: &str = "typing filters now · Enter keep · Esc clear";
pub const COMMAND_KEYS: &str = "Tab complete · Enter run · Esc cancel";

pub fn applies(binding: &Binding, view: View) -> bool {
    binding.views.is_empty() || binding.views.contains(&view)
}

/// The command a key press means in `view`, if any.
pub fn command_for(view: View, key: &KeyEvent) -> Option<Command> {
    // Ctrl-c always quits, whatever else is going on.
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        return Some(Command::Quit);
    }
    BINDINGS
        .iter()
        .filter(|b| applies(b, view))
        .find(|b| {
            b.keys
                .iter()
                .any(|(code, mods)| *code == key.code && key.modifiers == *mods)
        })
        .map(|b| b.command)
}

/// The command a `:` name means in `view`: every binding that works there.
pub fn command_named(view: View, name: &str) -> Option<Command> {
    BINDINGS
        .iter()
        .filter(|b| applies(b, view) && b.command != Command::CommandLine)
        .find(|b| b.name == name)
        .map(|b| b.command)
}

/// The `:` names that work in `view` and start with `prefix`, in table order.
pub fn completions(view: View, prefix: &str) -> Vec<&'static str> {
    BINDINGS
        .iter()
        .filter(|b| applies(b, view) && b.command != Command::CommandLine)
        .map(|b| b.name)
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// The footer's hints for `view`: "a approve", "r reject", ...
pub fn hints(view: View) -> Vec<(&'static str, &'static str)> {
    BINDINGS
        .iter()
        .filter(|b| applies(b, view))
        .filter_map(|b| b.hint)
        .collect()
}

/// Every binding for `view`, by group, for the help overlay: each key once.
pub fn help(view: View) -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut groups: Vec<(&'static str, Vec<(&'static str, &'static str)>)> = Vec::new();
    for binding in BINDINGS.iter().filter(|b| applies(b, view)) {
        match groups.iter_mut().find(|(g, _)| *g == binding.group) {
            Some((_, items)) => items.push((binding.key_label, binding.label)),
            None => groups.push((binding.group, vec![(binding.key_label, binding.label)])),
        }
    }
    groups.push(("Mouse", MOUSE_HELP.to_vec()));
    groups
}

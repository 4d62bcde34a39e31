//! One table of keys: what each does, where, and how it is labelled. The footer hints
//! and the help overlay are both drawn from it, so they cannot drift apart.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum View {
    Approvals,
    Unknown,
    Ledger,
}

impl View {
    pub const ALL: [View; 3] = [View::Approvals, View::Unknown, View::Ledger];

    pub fn title(self) -> &'static str {
        match self {
            View::Approvals => "Approvals",
            View::Unknown => "Unknown sends",
            View::Ledger => "Ledger",
        }
    }

    pub fn next(self) -> View {
        match self {
            View::Approvals => View::Unknown,
            View::Unknown => View::Ledger,
            View::Ledger => View::Approvals,
        }
    }

    pub fn previous(self) -> View {
        self.next().next()
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
    Approve,
    Reject,
    Recheck,
    MarkSent,
    MarkFailed,
    CycleStatus,
    ScrollDetailDown,
    ScrollDetailUp,
}

pub struct Binding {
    pub keys: &'static [(KeyCode, KeyModifiers)],
    /// How the key is written in hints: "a", "j/k", "Tab".
    pub key_label: &'static str,
    pub command: Command,
    pub label: &'static str,
    pub group: &'static str,
    /// The views it works in; empty means every view.
    pub views: &'static [View],
    /// Shown in the footer (the help overlay shows every binding).
    pub hint: bool,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[(KeyCode::Char('a'), NONE)],
        key_label: "a",
        command: Command::Approve,
        label: "approve",
        group: "Decide",
        views: &[View::Approvals],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('r'), NONE)],
        key_label: "r",
        command: Command::Reject,
        label: "reject",
        group: "Decide",
        views: &[View::Approvals],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('c'), NONE)],
        key_label: "c",
        command: Command::Recheck,
        label: "recheck facts",
        group: "Decide",
        views: &[View::Approvals],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('s'), NONE)],
        key_label: "s",
        command: Command::MarkSent,
        label: "mark sent",
        group: "Decide",
        views: &[View::Unknown],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('f'), NONE)],
        key_label: "f",
        command: Command::MarkFailed,
        label: "mark failed",
        group: "Decide",
        views: &[View::Unknown],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('t'), NONE)],
        key_label: "t",
        command: Command::CycleStatus,
        label: "status filter",
        group: "Find",
        views: &[View::Ledger],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('/'), NONE)],
        key_label: "/",
        command: Command::Filter,
        label: "filter",
        group: "Find",
        views: &[],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('j'), NONE), (KeyCode::Down, NONE)],
        key_label: "j/k",
        command: Command::Down,
        label: "move",
        group: "Move",
        views: &[],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('k'), NONE), (KeyCode::Up, NONE)],
        key_label: "k/↑",
        command: Command::Up,
        label: "up",
        group: "Move",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::PageDown, NONE), (KeyCode::Char('d'), CTRL)],
        key_label: "PgDn",
        command: Command::PageDown,
        label: "page down",
        group: "Move",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::PageUp, NONE), (KeyCode::Char('u'), CTRL)],
        key_label: "PgUp",
        command: Command::PageUp,
        label: "page up",
        group: "Move",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Char('g'), NONE), (KeyCode::Home, NONE)],
        key_label: "g",
        command: Command::Top,
        label: "first",
        group: "Move",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[
            (KeyCode::Char('G'), SHIFT),
            (KeyCode::Char('G'), NONE),
            (KeyCode::End, NONE),
        ],
        key_label: "G",
        command: Command::Bottom,
        label: "last",
        group: "Move",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Char('J'), SHIFT), (KeyCode::Char('J'), NONE)],
        key_label: "J/K",
        command: Command::ScrollDetailDown,
        label: "scroll the details",
        group: "Move",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Char('K'), SHIFT), (KeyCode::Char('K'), NONE)],
        key_label: "K",
        command: Command::ScrollDetailUp,
        label: "scroll the details up",
        group: "Move",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Tab, NONE)],
        key_label: "Tab",
        command: Command::NextView,
        label: "next view",
        group: "Views",
        views: &[],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::BackTab, SHIFT), (KeyCode::BackTab, NONE)],
        key_label: "S-Tab",
        command: Command::PreviousView,
        label: "previous view",
        group: "Views",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Char('1'), NONE)],
        key_label: "1",
        command: Command::Show(View::Approvals),
        label: "approvals",
        group: "Views",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Char('2'), NONE)],
        key_label: "2",
        command: Command::Show(View::Unknown),
        label: "unknown sends",
        group: "Views",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Char('3'), NONE)],
        key_label: "3",
        command: Command::Show(View::Ledger),
        label: "ledger",
        group: "Views",
        views: &[],
        hint: false,
    },
    Binding {
        keys: &[(KeyCode::Char('?'), NONE), (KeyCode::Char('?'), SHIFT)],
        key_label: "?",
        command: Command::Help,
        label: "help",
        group: "Other",
        views: &[],
        hint: true,
    },
    Binding {
        keys: &[(KeyCode::Char('q'), NONE), (KeyCode::Char('c'), CTRL)],
        key_label: "q",
        command: Command::Quit,
        label: "quit",
        group: "Other",
        views: &[],
        hint: true,
    },
];

fn applies(binding: &Binding, view: View) -> bool {
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

/// The footer's hints for `view`: "a approve", "r reject", ...
pub fn hints(view: View) -> Vec<(&'static str, &'static str)> {
    BINDINGS
        .iter()
        .filter(|b| b.hint && applies(b, view))
        .map(|b| (b.key_label, b.label))
        .collect()
}

/// Every binding for `view`, by group, for the help overlay.
pub fn help(view: View) -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut groups: Vec<(&'static str, Vec<(&'static str, &'static str)>)> = Vec::new();
    for binding in BINDINGS.iter().filter(|b| applies(b, view)) {
        match groups.iter_mut().find(|(g, _)| *g == binding.group) {
            Some((_, items)) => items.push((binding.key_label, binding.label)),
            None => groups.push((binding.group, vec![(binding.key_label, binding.label)])),
        }
    }
    groups
}

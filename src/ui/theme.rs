//! Styles. Nothing is told by colour alone: the selection is reversed and marked, the
//! active view is bracketed, badges are words; with colour off (NO_COLOR) only the
//! modifiers remain.

use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Copy, Debug)]
pub struct Theme {
    colour: bool,
}

impl Theme {
    pub fn new(colour: bool) -> Theme {
        Theme { colour }
    }

    /// Colour unless `NO_COLOR` is set to something.
    pub fn from_env() -> Theme {
        Theme::new(std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
    }

    /// Whether colours are drawn (NO_COLOR unset).
    pub fn colour(&self) -> bool {
        self.colour
    }

    fn fg(&self, style: Style, colour: Color) -> Style {
        if self.colour { style.fg(colour) } else { style }
    }

    pub fn title(&self) -> Style {
        self.fg(Style::default().add_modifier(Modifier::BOLD), Color::Cyan)
    }

    pub fn tab(&self) -> Style {
        Style::default()
    }

    pub fn tab_active(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }

    pub fn dim(&self) -> Style {
        Style::default().add_modifier(Modifier::DIM)
    }

    pub fn ok(&self) -> Style {
        self.fg(Style::default(), Color::Green)
    }

    pub fn warn(&self) -> Style {
        self.fg(Style::default(), Color::Yellow)
    }

    pub fn error(&self) -> Style {
        self.fg(Style::default(), Color::Red)
    }

    /// What must not be missed (the ledger is gone): reversed, so it stands out
    /// without colour too.
    pub fn alert(&self) -> Style {
        self.error()
            .add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }

    pub fn key(&self) -> Style {
        self.fg(Style::default().add_modifier(Modifier::BOLD), Color::Cyan)
    }

    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    /// A badge that only informs (a revision number, approved).
    pub fn badge_info(&self) -> Style {
        self.fg(Style::default(), Color::Blue)
    }

    /// A badge that asks for a second look (facts changed, approval expired): bold, so
    /// it stands apart from an informing badge without colour too.
    pub fn badge_warn(&self) -> Style {
        self.fg(Style::default().add_modifier(Modifier::BOLD), Color::Yellow)
    }

    /// A badge that must not be missed (hidden characters in the payload).
    pub fn badge_alert(&self) -> Style {
        self.fg(
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED),
            Color::Red,
        )
    }

    pub fn input_focused(&self) -> Style {
        Style::default().add_modifier(Modifier::UNDERLINED)
    }
}

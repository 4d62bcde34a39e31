//! The frame's layout, for drawing and for the mouse alike: where the header, banner,
//! body, status line and footer go, where the list and the detail pane are, and what a
//! position is over. It sits below both the state (`app`) and the drawing (`view`), so
//! a click lands on the row that is drawn there and neither has to import the other;
//! what it needs of the state is a [`Shape`].

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::{Block, Borders};

use super::keymap::View;

/// The smallest terminal the screen draws in; below it, a message says so.
pub const MIN_WIDTH: u16 = 64;
/// See [`MIN_WIDTH`].
pub const MIN_HEIGHT: u16 = 18;

/// What the layout depends on in the screen's state.
#[derive(Clone, Debug)]
pub struct Shape {
    /// The terminal's size, columns and rows.
    pub size: (u16, u16),
    /// The status line as drawn, mark included.
    pub status: Option<String>,
    /// The banner (an error that stays) as drawn, mark included.
    pub banner: Option<String>,
    /// A filter or the command line is being typed: the status line takes two rows.
    pub typing: bool,
    /// The view shown.
    pub view: View,
    /// How many rows its list has.
    pub rows: usize,
    /// The Approvals view has no queue to show (a ledger without one).
    pub no_queue: bool,
    /// The selected row.
    pub selected: usize,
}

/// The frame's rows: header, banner, body, status line, footer.
pub struct FrameAreas {
    pub header: Rect,
    pub banner: Rect,
    pub body: Rect,
    pub status: Rect,
    pub footer: Rect,
}

/// How many rows `text` takes, wrapped at word boundaries to `width` columns. A word
/// takes the columns the terminal gives it (a CJK character or an emoji two).
pub fn wrapped_rows(text: &str, width: u16) -> u16 {
    use unicode_width::UnicodeWidthStr;
    let width = usize::from(width).max(1);
    let (mut rows, mut used) = (1u16, 0usize);
    for word in text.split(' ') {
        let len = word.width();
        let needed = if used == 0 { len } else { used + 1 + len };
        if needed <= width {
            used = needed;
        } else {
            rows = rows.saturating_add(1);
            used = len.min(width);
            // A word longer than the line takes the rows it needs.
            rows = rows.saturating_add((len.saturating_sub(1) / width) as u16);
        }
    }
    rows
}

pub fn frame_areas(shape: &Shape, area: Rect) -> FrameAreas {
    // A long status (a refusal that names who decided first, a bulk settle's
    // refusals) gets the rows it needs, words whole.
    let status_rows = if shape.typing {
        2
    } else {
        shape
            .status
            .as_deref()
            .map_or(1, |text| wrapped_rows(text, area.width).clamp(1, 4))
    };
    let banner_rows = shape
        .banner
        .as_deref()
        .map_or(0, |text| wrapped_rows(text, area.width).clamp(1, 3));
    let [header, banner, body, status, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(banner_rows),
        Constraint::Min(5),
        Constraint::Length(status_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    FrameAreas {
        header,
        banner,
        body,
        status,
        footer,
    }
}

/// The list and detail panes of the body, when the view has rows to show.
pub fn body_areas(shape: &Shape, body: Rect) -> Option<(Rect, Rect)> {
    if shape.rows == 0 || (shape.view == View::Approvals && shape.no_queue) {
        return None;
    }
    // A decision is a wide row (when, who, action, outcome, subject) with a short
    // detail: the list takes the whole width, the detail goes below it.
    let [list, detail] = if shape.view == View::Decisions {
        Layout::vertical([Constraint::Percentage(65), Constraint::Percentage(35)]).areas(body)
    } else if body.width >= 90 {
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(body)
    } else {
        Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(body)
    };
    Some((list, detail))
}

/// What a mouse position is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// A row of the list (an index into the view's rows).
    Row(usize),
    /// The list, but no row.
    List,
    Detail,
    Elsewhere,
}

pub fn hit(shape: &Shape, column: u16, row: u16) -> Hit {
    let area = Rect::new(0, 0, shape.size.0, shape.size.1);
    let areas = frame_areas(shape, area);
    let Some((list, detail)) = body_areas(shape, areas.body) else {
        return Hit::Elsewhere;
    };
    let inside = |r: Rect| column >= r.x && column < r.right() && row >= r.y && row < r.bottom();
    if inside(detail) {
        return Hit::Detail;
    }
    if !inside(list) {
        return Hit::Elsewhere;
    }
    let mut inner = Block::default().borders(Borders::ALL).inner(list);
    if has_column_names(shape.view, list) {
        inner.y += 1;
        inner.height -= 1;
    }
    if !inside(inner) {
        return Hit::List;
    }
    let start = list_start(shape.selected, usize::from(inner.height));
    Hit::Row(start + usize::from(row - inner.y))
}

/// The indices of the rows a list of `total` in `area` shows with `selected` in view.
pub fn rows_in_view(area: Rect, selected: usize, total: usize) -> std::ops::Range<usize> {
    let height = usize::from(area.height.saturating_sub(2));
    let start = list_start(selected, height);
    let end = total.min(start.saturating_add(height));
    // A selection past the end (the list shrank under it) shows nothing rather than
    // a range that runs backwards.
    start.min(end)..end
}

/// The first row a list of `height` rows shows, so the selection is in view.
pub fn list_start(selected: usize, height: usize) -> usize {
    if height > 0 && selected >= height {
        selected + 1 - height
    } else {
        0
    }
}

/// Whether a view's list has a row of column names under its top border, which its
/// rows start below: the Decisions list, when it has room for one (`decisions::draw`
/// draws it, and a click counts rows from under it).
pub fn has_column_names(view: View, list: Rect) -> bool {
    view == View::Decisions && list.height > 4
}

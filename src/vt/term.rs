//! The terminal: the cursor, the scroll region, the modes and the two screens, and what each
//! edit does to them, as tmux 3.3a does it (`screen-write.c`), as far as the text of the
//! screen shows. Which sequence calls which edit is [`super::dispatch`].

use super::grid::{Grid, PAD};

/// The zero width joiner: the character after it joins the cell before it (as in tmux).
const ZWJ: char = '\u{200d}';

/// Where DECSC put the cursor.
#[derive(Clone, Copy, Debug, Default)]
struct Saved {
    x: u16,
    y: u16,
    origin: bool,
}

/// A terminal's state.
#[derive(Debug)]
pub struct Term {
    /// The screen shown (the main one, or the alternate one while it is on).
    pub(super) grid: Grid,
    /// The main screen while the alternate one is shown.
    main: Option<Grid>,
    /// The size, at least one cell.
    pub(super) rows: u16,
    pub(super) cols: u16,
    /// The cursor's column: `cols` while a wrap is pending (tmux's way).
    pub(super) x: u16,
    /// The cursor's row.
    pub(super) y: u16,
    /// The scroll region's first and last rows.
    pub(super) top: u16,
    pub(super) bottom: u16,
    /// DECOM: rows of cursor moves count from the region's top.
    pub(super) origin: bool,
    /// DECAWM: text wraps at the end of a row (on by default).
    pub(super) autowrap: bool,
    /// IRM: a printed character pushes the row's rest to the right.
    pub(super) insert: bool,
    /// LNM: a line feed also returns the carriage.
    pub(super) crlf: bool,
    /// The tab stops, by column.
    pub(super) tabs: Vec<bool>,
    saved: Saved,
    /// Where 1049 saved the cursor as the alternate screen came on.
    alt_cursor: Option<(u16, u16)>,
    /// The last character printed, for REP; gone after any other sequence.
    pub(super) last: Option<char>,
    /// A ZWJ came: the next character joins the cell before the cursor.
    zwj: bool,
}

/// A character's width in cells: 0 for a combining one. Unknown widths count as one, as tmux
/// counts them on Linux.
fn width(c: char) -> u16 {
    if c.is_ascii() {
        return 1;
    }
    unicode_width::UnicodeWidthChar::width(c).map_or(1, |w| w as u16)
}

impl Term {
    /// A terminal of this size, at least one cell.
    pub fn new(rows: u16, cols: u16) -> Term {
        let (rows, cols) = (rows.max(1), cols.max(1));
        Term {
            grid: Grid::new(rows, cols),
            main: None,
            rows,
            cols,
            x: 0,
            y: 0,
            top: 0,
            bottom: rows - 1,
            origin: false,
            autowrap: true,
            insert: false,
            crlf: false,
            tabs: default_tabs(cols),
            saved: Saved::default(),
            alt_cursor: None,
            last: None,
            zwj: false,
        }
    }

    /// The cursor: column (`cols` while a wrap is pending) and row.
    #[cfg(test)]
    pub fn cursor(&self) -> (u16, u16) {
        (self.x, self.y)
    }

    /// Moves the cursor as tmux's `screen_write_cursormove`: `origin` counts rows from the top
    /// of the scroll region when origin mode is on; both clamped to the screen.
    pub(super) fn move_to(&mut self, x: Option<u16>, y: Option<u16>, origin: bool) {
        if let Some(mut y) = y {
            if origin && self.origin {
                y = if y > self.bottom - self.top {
                    self.bottom
                } else {
                    y + self.top
                };
            }
            self.y = y.min(self.rows - 1);
        }
        if let Some(x) = x {
            self.x = x.min(self.cols - 1);
        }
    }

    /// Writes a character at the cursor as tmux's `screen_write_cell` does: a zero-width one
    /// (or one after a ZWJ) joins the cell before the cursor; a pending wrap, or a wide
    /// character that does not fit, goes to the next row first; the halves of a wide character
    /// it writes over are emptied; the cursor moves past it (onto the width: a pending wrap).
    pub(super) fn print(&mut self, c: char) {
        self.last = Some(c);
        if c == ZWJ {
            self.zwj = true;
            return;
        }
        let w = width(c);
        if self.zwj {
            self.combine(ZWJ);
        }
        if w == 0 || self.zwj {
            self.zwj = false;
            self.combine(c);
            return;
        }
        let (cols, rows) = (self.cols, self.rows);
        if !self.autowrap && w > 1 && (w > cols || (self.x != cols && self.x + w > cols)) {
            return;
        }
        if self.insert {
            self.insert_cells(w);
        }
        if self.autowrap && self.x + w > cols {
            self.linefeed(true);
            self.x = 0;
        }
        if self.x + w > cols || self.y >= rows {
            return;
        }
        let (x, y) = (self.x, self.y);
        let row = self.grid.row(y);
        if row.get(x) == PAD {
            // Half of a wide character goes: the rest of it is emptied.
            let mut at = x;
            while at > 0 && row.get(at) == PAD {
                row.clear(at, at + 1);
                at -= 1;
            }
            row.clear(at, at + 1);
        }
        let mut after = x + w;
        while after < cols && row.get(after) == PAD {
            row.clear(after, after + 1);
            after += 1;
        }
        row.set(x, c);
        for pad in x + 1..x + w {
            row.set(pad, PAD);
        }
        let last = u16::from(!self.autowrap);
        self.x = if x + w + last <= cols {
            x + w
        } else {
            cols - last
        };
    }

    /// Appends a zero-width character to the cell left of the cursor (tmux's
    /// `screen_write_combine`; nothing at the first column).
    pub(super) fn combine(&mut self, c: char) {
        let row = self.grid.row(self.y);
        let mut at = self.x;
        while at > 0 {
            at -= 1;
            if row.get(at) != PAD {
                row.mark(at, c);
                return;
            }
        }
    }

    /// A line feed: down one row, or the scroll region up at its bottom; `wrapped` when the
    /// text went on past the end of the row.
    pub(super) fn linefeed(&mut self, wrapped: bool) {
        if wrapped {
            self.grid.row(self.y).wrapped = true;
        }
        if self.y == self.bottom {
            self.scroll_up();
        } else if self.y < self.rows - 1 {
            self.y += 1;
        }
    }

    /// The scroll region up one row.
    pub(super) fn scroll_up(&mut self) {
        if self.main.is_none() && self.top == 0 && self.bottom == self.rows - 1 {
            self.grid.scroll_into_history();
        } else {
            self.grid
                .move_lines(self.top, self.top + 1, self.bottom - self.top);
        }
    }

    /// The scroll region down one row.
    pub(super) fn scroll_down(&mut self) {
        self.grid
            .move_lines(self.top + 1, self.top, self.bottom - self.top);
    }

    pub(super) fn reverse_index(&mut self) {
        if self.y == self.top {
            self.scroll_down();
        } else if self.y > 0 {
            self.y -= 1;
        }
    }

    pub(super) fn backspace(&mut self) {
        if self.x == 0 {
            if self.y > 0 && self.grid.row(self.y - 1).wrapped {
                self.y -= 1;
                self.x = self.cols - 1;
            }
        } else {
            self.x -= 1;
        }
    }

    pub(super) fn tab(&mut self) {
        if self.x + 1 >= self.cols {
            return;
        }
        loop {
            self.x += 1;
            if self.tabs[usize::from(self.x)] || self.x + 1 >= self.cols {
                break;
            }
        }
    }

    pub(super) fn back_tab(&mut self, n: u16) {
        let mut x = self.x.min(self.cols - 1);
        let mut n = n;
        while x > 0 && n > 0 {
            n -= 1;
            loop {
                x -= 1;
                if x == 0 || self.tabs[usize::from(x)] {
                    break;
                }
            }
        }
        self.x = x;
    }

    pub(super) fn cursor_up(&mut self, n: u16) {
        let room = if self.y < self.top {
            self.y
        } else {
            self.y - self.top
        };
        if self.x == self.cols {
            self.x -= 1;
        }
        self.y -= n.max(1).min(room);
    }

    pub(super) fn cursor_down(&mut self, n: u16) {
        let room = if self.y > self.bottom {
            self.rows - 1 - self.y
        } else {
            self.bottom - self.y
        };
        let n = n.max(1).min(room);
        if self.x == self.cols {
            self.x -= 1;
        } else if n == 0 {
            return;
        }
        self.y += n;
    }

    pub(super) fn cursor_right(&mut self, n: u16) {
        if self.x < self.cols {
            self.x += n.max(1).min(self.cols - 1 - self.x);
        }
    }

    pub(super) fn cursor_left(&mut self, n: u16) {
        self.x -= n.max(1).min(self.x);
    }

    /// ICH, and room for a character in insert mode.
    pub(super) fn insert_cells(&mut self, n: u16) {
        let (x, cols) = (self.x, self.cols);
        if x >= cols {
            return;
        }
        let n = n.max(1).min(cols - x);
        let row = self.grid.row(self.y);
        if x >= cols - 1 {
            row.clear(x, x + 1);
        } else {
            row.move_cells(x + n, x, cols - x - n);
        }
    }

    pub(super) fn delete_cells(&mut self, n: u16) {
        let (x, cols) = (self.x, self.cols);
        if x >= cols {
            return;
        }
        let n = n.max(1).min(cols - x);
        self.grid.row(self.y).move_cells(x, x + n, cols - x - n);
        // tmux then clears from `cols - n` as many cells as `x + 2n` passes the end.
        let past = (u32::from(x) + 2 * u32::from(n)).saturating_sub(u32::from(cols));
        if past > 0 {
            self.grid.clear(cols - n, self.y, past as u16, 1);
        }
    }

    pub(super) fn erase_cells(&mut self, n: u16) {
        if self.x < self.cols {
            let n = n.max(1).min(self.cols - self.x);
            self.grid.clear(self.x, self.y, n, 1);
        }
    }

    pub(super) fn insert_lines(&mut self, n: u16) {
        let (y, rows) = (self.y, self.rows);
        let n = n.max(1);
        if y < self.top || y > self.bottom {
            let n = n.min(rows - y);
            self.grid.move_lines(y + n, y, rows - y - n);
        } else {
            let n = n.min(self.bottom + 1 - y);
            let kept = self.bottom + 1 - y - n;
            self.grid.move_lines(self.bottom + 1 - kept, y, kept);
            if n > kept {
                self.grid.clear_lines(y + kept, n - kept);
            }
        }
    }

    pub(super) fn delete_lines(&mut self, n: u16) {
        let (y, rows) = (self.y, self.rows);
        let n = n.max(1);
        if y < self.top || y > self.bottom {
            let n = n.min(rows - y);
            self.grid.move_lines(y, y + n, rows - y - n);
            let past = (u32::from(y) + 2 * u32::from(n)).saturating_sub(u32::from(rows));
            if past > 0 {
                self.grid.clear_lines(rows - n, past as u16);
            }
        } else {
            let n = n.min(self.bottom + 1 - y);
            let kept = self.bottom + 1 - y - n;
            self.grid.move_lines(y, y + n, kept);
            if n > kept {
                self.grid.clear_lines(y + kept, n - kept);
            }
        }
    }

    pub(super) fn erase_display(&mut self, mode: u16) {
        let (x, y, cols, rows) = (self.x, self.y, self.cols, self.rows);
        match mode {
            0 => {
                if x < cols {
                    self.grid.clear(x, y, cols - x, 1);
                }
                self.grid.clear(0, y + 1, cols, rows - (y + 1));
            }
            1 => {
                if y > 0 {
                    self.grid.clear(0, 0, cols, y);
                }
                self.grid.clear(0, y, (x + 1).min(cols), 1);
            }
            2 => self.grid.clear(0, 0, cols, rows),
            _ => {}
        }
    }

    pub(super) fn erase_line(&mut self, mode: u16) {
        let (x, y, cols) = (self.x, self.y, self.cols);
        match mode {
            0 if x == 0 => self.clear_line(),
            0 if x < cols => self.grid.clear(x, y, cols - x, 1),
            1 if x + 1 >= cols => self.clear_line(),
            1 => self.grid.clear(0, y, x + 1, 1),
            2 => self.clear_line(),
            _ => {}
        }
    }

    /// EL 2: a row that was never written is left alone (and so is the wrap flag above it).
    pub(super) fn clear_line(&mut self) {
        if !self.grid.row(self.y).untouched() {
            self.grid.clear(0, self.y, self.cols, 1);
        }
    }

    pub(super) fn set_region(&mut self, top: u16, bottom: u16) {
        let top = top.min(self.rows - 1);
        let bottom = bottom.min(self.rows - 1);
        if top >= bottom {
            return;
        }
        self.x = 0;
        self.y = 0;
        self.top = top;
        self.bottom = bottom;
    }

    pub(super) fn alternate_on(&mut self, save_cursor: bool) {
        if self.main.is_some() {
            return;
        }
        if save_cursor {
            self.alt_cursor = Some((self.x, self.y));
        }
        let alternate = Grid::new(self.rows, self.cols);
        self.main = Some(std::mem::replace(&mut self.grid, alternate));
    }

    pub(super) fn alternate_off(&mut self, restore_cursor: bool) {
        if restore_cursor {
            if let Some((x, y)) = self.alt_cursor {
                self.x = x;
                self.y = y;
            }
        }
        if let Some(main) = self.main.take() {
            self.grid = main;
        }
        self.x = self.x.min(self.cols - 1);
        self.y = self.y.min(self.rows - 1);
    }

    pub(super) fn reset(&mut self) {
        self.tabs = default_tabs(self.cols);
        self.set_region(0, self.rows - 1);
        self.origin = false;
        self.insert = false;
        self.crlf = false;
        self.autowrap = true;
        self.grid.clear(0, 0, self.cols, self.rows);
        self.x = 0;
        self.y = 0;
        self.saved = Saved::default();
    }

    pub(super) fn save(&mut self) {
        self.saved = Saved {
            x: self.x,
            y: self.y,
            origin: self.origin,
        };
    }

    pub(super) fn restore(&mut self) {
        self.origin = self.saved.origin;
        self.move_to(Some(self.saved.x), Some(self.saved.y), false);
    }
}

pub(super) fn default_tabs(cols: u16) -> Vec<bool> {
    (0..cols).map(|x| x > 0 && x % 8 == 0).collect()
}

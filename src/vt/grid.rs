//! The rows of a screen: each cell's character, each row's wrap flag, and each row's text kept
//! until the row changes. The operations are tmux's (`grid.c`, `grid-view.c` of tmux 3.3a):
//! which cells and lines an edit empties and which wrap flags it drops, so that joined lines
//! come out as `capture-pane -J` joins them.

/// A cell nothing was written to, or that was cleared.
pub const EMPTY: char = '\0';
/// The second column of a wide character (never printed: the parser hands over no C0 control).
pub const PAD: char = '\u{1}';

/// One row of cells.
#[derive(Clone, Debug)]
pub struct Row {
    cells: Vec<char>,
    /// Zero-width characters appended to a cell (combining marks, joined emoji), by column.
    marks: Vec<(u16, char)>,
    /// The row continues on the next one (the program's text wrapped at its end).
    pub wrapped: bool,
    /// The row's text while `dirty` is false.
    text: String,
    dirty: bool,
}

impl Row {
    fn new(cols: u16) -> Row {
        Row {
            cells: vec![EMPTY; usize::from(cols)],
            marks: Vec::new(),
            wrapped: false,
            text: String::new(),
            dirty: true,
        }
    }

    /// Makes the row as new: every cell empty, no wrap flag.
    pub fn reset(&mut self) {
        self.cells.fill(EMPTY);
        self.marks.clear();
        self.wrapped = false;
        self.dirty = true;
    }

    /// Whether no cell of the row was written since it was last made new (tmux's line without
    /// cells, which a line clear leaves alone).
    pub fn untouched(&self) -> bool {
        self.cells.iter().all(|c| *c == EMPTY)
    }

    /// The character at column `x` ([`EMPTY`] beyond the row).
    pub fn get(&self, x: u16) -> char {
        self.cells.get(usize::from(x)).copied().unwrap_or(EMPTY)
    }

    /// Writes `c` at column `x`, dropping what was appended to the cell before.
    pub fn set(&mut self, x: u16, c: char) {
        if let Some(cell) = self.cells.get_mut(usize::from(x)) {
            *cell = c;
            self.marks.retain(|(at, _)| *at != x);
            self.dirty = true;
        }
    }

    /// Appends a zero-width character to the cell at column `x`.
    pub fn mark(&mut self, x: u16, c: char) {
        self.marks.push((x, c));
        self.dirty = true;
    }

    /// Empties the cells from `x0` to before `x1`.
    pub fn clear(&mut self, x0: u16, x1: u16) {
        let end = usize::from(x1).min(self.cells.len());
        let start = usize::from(x0).min(end);
        self.cells[start..end].fill(EMPTY);
        self.marks
            .retain(|(at, _)| usize::from(*at) < start || usize::from(*at) >= end);
        self.dirty = true;
    }

    /// Moves `n` cells from column `px` to column `dx`; the moved cells that no moved cell
    /// covers are emptied (tmux's `grid_move_cells`).
    pub fn move_cells(&mut self, dx: u16, px: u16, n: u16) {
        let cols = self.cells.len();
        let (dx, px, n) = (usize::from(dx), usize::from(px), usize::from(n));
        if n == 0 || dx == px || px + n > cols || dx + n > cols {
            return;
        }
        self.cells.copy_within(px..px + n, dx);
        for x in px..px + n {
            if x < dx || x >= dx + n {
                self.cells[x] = EMPTY;
            }
        }
        // A mark of a moved cell moves with it; one of a cell the move covered goes.
        self.marks = std::mem::take(&mut self.marks)
            .into_iter()
            .filter_map(|(at, c)| {
                let a = usize::from(at);
                if (px..px + n).contains(&a) {
                    Some((u16::try_from(a + dx - px).ok()?, c))
                } else if (dx..dx + n).contains(&a) {
                    None
                } else {
                    Some((at, c))
                }
            })
            .collect();
        self.dirty = true;
    }

    /// The row's text: its cells to the last one written, an empty cell as a space, the second
    /// column of a wide character left out.
    fn text(&mut self) -> &str {
        if self.dirty {
            self.text.clear();
            let end = self
                .cells
                .iter()
                .rposition(|c| *c != EMPTY)
                .map_or(0, |i| i + 1);
            for (x, c) in self.cells[..end].iter().enumerate() {
                match *c {
                    PAD => continue,
                    EMPTY => self.text.push(' '),
                    c => self.text.push(c),
                }
                if !self.marks.is_empty() {
                    for (_, m) in self.marks.iter().filter(|(at, _)| usize::from(*at) == x) {
                        self.text.push(*m);
                    }
                }
            }
            self.dirty = false;
        }
        &self.text
    }
}

/// The visible rows of one screen (the main one or the alternate one).
#[derive(Clone, Debug)]
pub struct Grid {
    rows: Vec<Row>,
    cols: u16,
}

impl Grid {
    /// An empty grid.
    pub fn new(rows: u16, cols: u16) -> Grid {
        Grid {
            rows: (0..rows).map(|_| Row::new(cols)).collect(),
            cols,
        }
    }

    /// Row `y` (the last row for a `y` beyond the screen: the cursor never is there).
    pub fn row(&mut self, y: u16) -> &mut Row {
        let last = self.rows.len() - 1;
        &mut self.rows[usize::from(y).min(last)]
    }

    fn height(&self) -> usize {
        self.rows.len()
    }

    /// Empties `nx` cells from column `x` in `ny` rows from `y`; whole rows are made new
    /// (tmux's `grid_clear`).
    pub fn clear(&mut self, x: u16, y: u16, nx: u16, ny: u16) {
        if nx == 0 || ny == 0 {
            return;
        }
        if x == 0 && nx >= self.cols {
            self.clear_lines(y, ny);
            return;
        }
        let end = (usize::from(y) + usize::from(ny)).min(self.height());
        for row in &mut self.rows[usize::from(y).min(end)..end] {
            row.clear(x, x.saturating_add(nx));
        }
    }

    /// Makes `n` rows from `y` new, and drops the wrap flag of the row above them (tmux's
    /// `grid_clear_lines`).
    pub fn clear_lines(&mut self, y: u16, n: u16) {
        let (y, n) = (usize::from(y), usize::from(n));
        if n == 0 || y + n > self.height() {
            return;
        }
        for row in &mut self.rows[y..y + n] {
            row.reset();
        }
        if y > 0 {
            self.rows[y - 1].wrapped = false;
        }
    }

    /// Moves `n` rows from `py` to `dy`, rows and their text as they are; the moved rows that
    /// no moved row covers are made new, and the wrap flags above the two places dropped
    /// (tmux's `grid_move_lines`).
    pub fn move_lines(&mut self, dy: u16, py: u16, n: u16) {
        let (dy, py, n) = (usize::from(dy), usize::from(py), usize::from(n));
        if n == 0 || dy == py || py + n > self.height() || dy + n > self.height() {
            return;
        }
        if dy < py {
            for i in 0..n {
                self.rows.swap(dy + i, py + i);
            }
        } else {
            for i in (0..n).rev() {
                self.rows.swap(dy + i, py + i);
            }
        }
        for y in py..py + n {
            if y < dy || y >= dy + n {
                self.rows[y].reset();
            }
        }
        if dy > 0 {
            self.rows[dy - 1].wrapped = false;
        }
        if py > 0 && (py < dy || py >= dy + n) {
            self.rows[py - 1].wrapped = false;
        }
    }

    /// The whole screen scrolls up one row into the history: the rows keep their flags, a new
    /// row comes in at the bottom.
    pub fn scroll_into_history(&mut self) {
        self.rows.rotate_left(1);
        if let Some(last) = self.rows.last_mut() {
            last.reset();
        }
    }

    /// The screen's text with every row read again (what [`Grid::text`] must equal).
    pub fn text_uncached(&mut self) -> String {
        self.rows.iter_mut().for_each(|r| r.dirty = true);
        self.text()
    }

    /// The screen as `capture-pane -p -J` shows it: a wrapped row joined to the next, trailing
    /// spaces of each line and trailing empty lines dropped. Only the rows that changed since
    /// the last call are read again.
    pub fn text(&mut self) -> String {
        let mut out = String::with_capacity(self.rows.len() * 32);
        for row in &mut self.rows {
            let wrapped = row.wrapped;
            out.push_str(row.text());
            if !wrapped {
                let end = out.trim_end_matches(' ').len();
                out.truncate(end);
                out.push('\n');
            }
        }
        let end = out.trim_end_matches('\n').len();
        out.truncate(end);
        out
    }
}

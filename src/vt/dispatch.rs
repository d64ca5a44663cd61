//! Which edit each escape sequence makes, as tmux 3.3a's parser (`input.c`) maps them: the
//! sequences tmux ignores are ignored here too, and so are colours and attributes.

use super::term::Term;

impl Term {
    pub(super) fn private_mode(&mut self, mode: u16, on: bool) {
        match mode {
            3 => {
                self.move_to(Some(0), Some(0), true);
                self.grid.clear(0, 0, self.cols, self.rows);
            }
            6 => {
                self.origin = on;
                self.move_to(Some(0), Some(0), true);
            }
            7 => self.autowrap = on,
            47 | 1047 if on => self.alternate_on(false),
            47 | 1047 => self.alternate_off(false),
            1049 if on => self.alternate_on(true),
            1049 => self.alternate_off(true),
            _ => {}
        }
    }

    fn csi(&mut self, params: &[u16], private: bool, action: char) {
        // tmux's `input_get`: a missing parameter is the default, one below the least is the
        // least (vte gives a missing one as 0).
        let arg = |i: usize, least: u16, default: u16| match params.get(i) {
            None | Some(0) if default != 0 => default.max(least),
            None => default,
            Some(&v) => v.max(least),
        };
        let one = arg(0, 1, 1);
        if private {
            match action {
                'h' | 'l' => {
                    for &m in params {
                        self.private_mode(m, action == 'h');
                    }
                }
                _ => {}
            }
            return;
        }
        match action {
            '@' => self.insert_cells(one),
            'A' => self.cursor_up(one),
            'B' => self.cursor_down(one),
            'C' => self.cursor_right(one),
            'D' => self.cursor_left(one),
            'E' => {
                self.x = 0;
                self.cursor_down(one);
            }
            'F' => {
                self.x = 0;
                self.cursor_up(one);
            }
            'G' | '`' => self.move_to(Some(one - 1), None, true),
            'H' | 'f' => {
                let col = arg(1, 1, 1);
                self.move_to(Some(col - 1), Some(one - 1), true);
            }
            'J' => self.erase_display(arg(0, 0, 0)),
            'K' => self.erase_line(arg(0, 0, 0)),
            'L' => self.insert_lines(one),
            'M' => self.delete_lines(one),
            'P' => self.delete_cells(one),
            'S' => {
                let n = one.min(self.bottom - self.top + 1);
                for _ in 0..n {
                    self.scroll_up();
                }
            }
            'T' => {
                let n = one.min(self.bottom - self.top + 1);
                for _ in 0..n {
                    self.scroll_down();
                }
            }
            'X' => self.erase_cells(one),
            'Z' => self.back_tab(one),
            'b' => {
                if let Some(c) = self.last {
                    let n = one.min(self.cols.saturating_sub(self.x));
                    for _ in 0..n {
                        self.print(c);
                    }
                }
            }
            'd' => self.move_to(None, Some(one - 1), true),
            'g' => match arg(0, 0, 0) {
                0 if self.x < self.cols => self.tabs[usize::from(self.x)] = false,
                3 => self.tabs.fill(false),
                _ => {}
            },
            'h' | 'l' => {
                for &m in params {
                    match m {
                        4 => self.insert = action == 'h',
                        20 => self.crlf = action == 'h',
                        _ => {}
                    }
                }
            }
            'r' => {
                let bottom = arg(1, 1, self.rows);
                self.set_region(one - 1, bottom - 1);
            }
            's' => self.save(),
            'u' => self.restore(),
            _ => {}
        }
    }
}

impl vte::Perform for Term {
    fn print(&mut self, c: char) {
        Term::print(self, c);
    }

    fn execute(&mut self, byte: u8) {
        self.last = None;
        match byte {
            0x08 => self.backspace(),
            0x09 => self.tab(),
            0x0a..=0x0c => {
                self.linefeed(false);
                if self.crlf {
                    self.x = 0;
                }
            }
            0x0d => self.x = 0,
            _ => {}
        }
    }

    fn csi_dispatch(
        &mut self,
        params: &vte::Params,
        intermediates: &[u8],
        ignore: bool,
        action: char,
    ) {
        let last = self.last.take();
        if ignore {
            return;
        }
        let private = match intermediates {
            [] => false,
            [b'?'] => true,
            _ => return,
        };
        let mut list = [0u16; 16];
        let mut n = 0;
        for p in params.iter().take(list.len()) {
            list[n] = p.first().copied().unwrap_or(0);
            n += 1;
        }
        if action == 'b' && !private {
            self.last = last;
        }
        self.csi(&list[..n], private, action);
        self.last = None;
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], ignore: bool, byte: u8) {
        self.last = None;
        if ignore {
            return;
        }
        match (intermediates, byte) {
            ([], b'7') => self.save(),
            ([], b'8') => self.restore(),
            ([b'#'], b'8') => {
                for y in 0..self.rows {
                    let row = self.grid.row(y);
                    for x in 0..self.cols {
                        row.set(x, 'E');
                    }
                }
                self.x = 0;
                self.y = 0;
                self.top = 0;
                self.bottom = self.rows - 1;
            }
            ([], b'D') => self.linefeed(false),
            ([], b'E') => {
                self.x = 0;
                self.linefeed(false);
            }
            ([], b'H') if self.x < self.cols => self.tabs[usize::from(self.x)] = true,
            ([], b'M') => self.reverse_index(),
            ([], b'c') => self.reset(),
            _ => {}
        }
    }
}

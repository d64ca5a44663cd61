//! Keys to actions, with no terminal involved: the runtime feeds crossterm key events here and
//! carries out the [`Outcome`] (requests to send, options to save, quit). Tests drive it the same.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::ipc::schema::Request;

use super::menu::{self, Chosen};
use super::model::{PanelModel, Screen};

/// What a key asks the runtime to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Requests to send to the daemon, in order.
    pub requests: Vec<Request>,
    /// The view options changed: save them.
    pub save_options: bool,
    /// Leave the panel (after sending the requests).
    pub quit: bool,
}

impl Outcome {
    fn quit() -> Self {
        Outcome {
            quit: true,
            ..Default::default()
        }
    }
}

/// Handles one key.
pub fn handle_key(m: &mut PanelModel, key: KeyEvent) -> Outcome {
    if key.kind == KeyEventKind::Release {
        return Outcome::default();
    }
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        return Outcome::quit();
    }
    if m.menu.is_some() {
        return menu_key(m, key.code);
    }
    match key.code {
        KeyCode::Char('q') => return Outcome::quit(),
        KeyCode::Esc if m.screen == Screen::List => return Outcome::quit(),
        KeyCode::Esc => m.screen = Screen::List,
        KeyCode::Up | KeyCode::Char('k') => m.move_selection(-1),
        KeyCode::Down | KeyCode::Char('j') => m.move_selection(1),
        KeyCode::PageUp => m.move_selection(-5),
        KeyCode::PageDown => m.move_selection(5),
        KeyCode::Home | KeyCode::Char('g') => m.move_selection(-10_000),
        KeyCode::End | KeyCode::Char('G') => m.move_selection(10_000),
        KeyCode::Enter => return go(m),
        KeyCode::Char('m' | 'v') => m.menu = Some(0),
        KeyCode::Char('n') => {
            m.screen = if m.screen == Screen::Notifications {
                Screen::List
            } else {
                Screen::Notifications
            }
        }
        KeyCode::Char('d' | 'i') => {
            m.screen = match m.screen {
                Screen::Detail => Screen::List,
                _ if m.selected_pane().is_some() => Screen::Detail,
                s => s,
            }
        }
        KeyCode::Char(' ' | 's') => m.toggle_subtasks(),
        KeyCode::Char('r') => return reload(m),
        _ => {}
    }
    Outcome::default()
}

/// Enter: focus the chosen pane, mark it seen, and close the popup (S5.9).
fn go(m: &mut PanelModel) -> Outcome {
    let card = match m.screen {
        Screen::Notifications => {
            let rows = m.notifications();
            rows.get(m.notice_cursor).and_then(|w| m.notice_pane(w))
        }
        _ => m.selected_pane().map(super::model::CardKey::of),
    };
    match card {
        Some(card) => Outcome {
            requests: vec![
                Request::Focus {
                    pane: card.pane,
                    client: None,
                    machine: card.machine.clone(),
                },
                Request::Seen {
                    pane: card.pane,
                    machine: card.machine,
                },
            ],
            quit: true,
            ..Default::default()
        },
        None => Outcome::default(),
    }
}

fn reload(m: &mut PanelModel) -> Outcome {
    match menu::choose(m, menu::MenuItem::Reload) {
        Chosen::Reload => Outcome {
            requests: vec![Request::Reload],
            ..Default::default()
        },
        _ => Outcome::default(),
    }
}

fn menu_key(m: &mut PanelModel, code: KeyCode) -> Outcome {
    let cursor = m.menu.unwrap_or(0);
    match code {
        KeyCode::Esc | KeyCode::Char('m' | 'v' | 'q') => m.menu = None,
        KeyCode::Up | KeyCode::Char('k') => m.menu = Some(cursor.saturating_sub(1)),
        KeyCode::Down | KeyCode::Char('j') => {
            let n = menu::items(m).len();
            m.menu = Some((cursor + 1).min(n - 1));
        }
        KeyCode::Enter | KeyCode::Char(' ') => {
            let items = menu::items(m);
            match menu::choose(m, items[cursor.min(items.len() - 1)]) {
                Chosen::OptionsChanged => {
                    return Outcome {
                        save_options: true,
                        ..Default::default()
                    }
                }
                Chosen::Reload => {
                    return Outcome {
                        requests: vec![Request::Reload],
                        ..Default::default()
                    }
                }
                Chosen::Refused => {}
            }
        }
        KeyCode::Char('r') => return reload(m),
        _ => {}
    }
    Outcome::default()
}

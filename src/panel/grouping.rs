//! Grouping and order of the cards (S5.7): the flat list of headings and cards the renderer
//! draws, computed from the model and the view options. Order inside a group is fixed by
//! session, window, agent and pane, so rows never jump when states change.

use std::cmp::Ordering;

use crate::ipc::schema::PaneRow;

use super::model::{category, Category, PanelModel};
use super::options::{Grouping, SortOrder};

/// One row of the list.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry<'a> {
    /// A group heading, with the number of cards under it when it counts them.
    Heading {
        /// The heading's text.
        text: String,
        /// The number of cards under it.
        count: Option<usize>,
    },
    /// A second-level heading (a window under its session).
    SubHeading(String),
    /// One agent's card.
    Card(&'a PaneRow),
}

/// Why the list has no cards, if it has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emptiness {
    /// There are cards to show.
    NotEmpty,
    /// No agent anywhere: `No agents detected`.
    NoAgents,
    /// Agents exist but the show checkboxes hide them all.
    AllHidden,
}

/// Whether the list is empty, and why.
pub fn emptiness(m: &PanelModel) -> Emptiness {
    if m.agents().next().is_none() {
        Emptiness::NoAgents
    } else if shown(m).is_empty() {
        Emptiness::AllHidden
    } else {
        Emptiness::NotEmpty
    }
}

/// The display name of a pane's agent, for sorting and the generic mark.
pub fn agent_name(p: &PaneRow) -> &str {
    p.agent_name
        .as_deref()
        .or(p.agent.as_deref())
        .unwrap_or("agent")
}

/// The fixed order: session, window, agent, pane.
pub fn fixed_order(a: &PaneRow, b: &PaneRow) -> Ordering {
    (
        a.session_name.as_str(),
        a.window_index,
        agent_name(a),
        a.pane_index,
        a.pane,
    )
        .cmp(&(
            b.session_name.as_str(),
            b.window_index,
            agent_name(b),
            b.pane_index,
            b.pane,
        ))
}

fn shown(m: &PanelModel) -> Vec<&PaneRow> {
    let show = m.options.show;
    let mut cards: Vec<&PaneRow> = m
        .agents()
        .filter(|p| category(p).show_kind().map_or(true, |k| show.get(k)))
        .collect();
    match m.options.sort {
        SortOrder::Fixed => cards.sort_by(|a, b| fixed_order(a, b)),
        SortOrder::Recent => {
            cards.sort_by(|a, b| b.since_ms.cmp(&a.since_ms).then_with(|| fixed_order(a, b)))
        }
    }
    cards
}

/// Agents without a window are listed under `Other` in the session grouping.
fn has_window(p: &PaneRow) -> bool {
    !p.window_name.is_empty() || p.window_index != 0 || !p.session_name.is_empty()
}

/// The rows to draw, in order.
pub fn entries(m: &PanelModel) -> Vec<Entry<'_>> {
    let cards = shown(m);
    let mut out = Vec::with_capacity(cards.len() + 8);
    match m.options.grouping {
        Grouping::None => out.extend(cards.into_iter().map(Entry::Card)),
        Grouping::State => {
            for cat in Category::ALL {
                let group: Vec<&PaneRow> = cards
                    .iter()
                    .copied()
                    .filter(|p| category(p) == cat)
                    .collect();
                if group.is_empty() {
                    continue;
                }
                out.push(Entry::Heading {
                    text: cat.heading().to_string(),
                    count: Some(group.len()),
                });
                out.extend(group.into_iter().map(Entry::Card));
            }
        }
        Grouping::Session => {
            let (mut placed, other): (Vec<&PaneRow>, Vec<&PaneRow>) =
                cards.into_iter().partition(|p| has_window(p));
            // Sessions and windows keep their fixed order; the sort applies inside a window.
            placed.sort_by(|a, b| {
                (a.session_name.as_str(), a.session, a.window_index, a.window).cmp(&(
                    b.session_name.as_str(),
                    b.session,
                    b.window_index,
                    b.window,
                ))
            });
            let mut i = 0;
            while i < placed.len() {
                let session = placed[i].session;
                let in_session = placed[i..]
                    .iter()
                    .take_while(|p| p.session == session)
                    .count();
                out.push(Entry::Heading {
                    text: placed[i].session_name.clone(),
                    count: Some(in_session),
                });
                let mut j = i;
                while j < i + in_session {
                    let window = placed[j].window;
                    out.push(Entry::SubHeading(window_label(placed[j])));
                    while j < i + in_session && placed[j].window == window {
                        out.push(Entry::Card(placed[j]));
                        j += 1;
                    }
                }
                i += in_session;
            }
            if !other.is_empty() {
                out.push(Entry::Heading {
                    text: "Other".to_string(),
                    count: Some(other.len()),
                });
                out.extend(other.into_iter().map(Entry::Card));
            }
        }
    }
    out
}

/// A window's heading: `2: Thread 2` (or the index alone when unnamed).
pub fn window_label(p: &PaneRow) -> String {
    if p.window_name.is_empty() {
        p.window_index.to_string()
    } else {
        format!("{}: {}", p.window_index, p.window_name)
    }
}

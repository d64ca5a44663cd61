//! The view menu (S5.8): show checkboxes, grouping, sort, the four display switches and
//! "reload detection rules". Machines are not listed: a panel sees one tmux server, and S5.8
//! shows that section only when agents are on several machines.

use super::model::PanelModel;
use super::options::ShowKind;

/// One choosable line of the menu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MenuItem {
    /// A show checkbox.
    Show(ShowKind),
    /// Cycle the grouping.
    Grouping,
    /// Cycle the sort order.
    Sort,
    /// A display switch.
    Display(Switch),
    /// Send `reload` to the daemon.
    Reload,
}

/// The four display switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// Description.
    Description,
    /// Waiting reason.
    WaitingReason,
    /// Progress.
    Progress,
    /// Subtasks.
    Subtasks,
}

/// The menu, in order; headings are drawn before the first item of each section.
pub const ITEMS: [MenuItem; 11] = [
    MenuItem::Show(ShowKind::Attention),
    MenuItem::Show(ShowKind::Running),
    MenuItem::Show(ShowKind::Done),
    MenuItem::Show(ShowKind::Idle),
    MenuItem::Grouping,
    MenuItem::Sort,
    MenuItem::Display(Switch::Description),
    MenuItem::Display(Switch::WaitingReason),
    MenuItem::Display(Switch::Progress),
    MenuItem::Display(Switch::Subtasks),
    MenuItem::Reload,
];

/// What choosing an item did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    /// A view option changed (save it).
    OptionsChanged,
    /// Nothing changed (the last shown kind cannot be hidden).
    Refused,
    /// Reload was asked for.
    Reload,
}

/// The section heading shown above an item, if it opens a section.
pub fn section(i: usize) -> Option<&'static str> {
    match i {
        0 => Some("Show"),
        6 => Some("Display"),
        _ => None,
    }
}

/// The text of an item given the current options (`[x] Running`, `Group by  State`).
pub fn label(m: &PanelModel, item: MenuItem) -> String {
    let o = &m.options;
    let check = |b: bool| if b { "[x]" } else { "[ ]" };
    match item {
        MenuItem::Show(k) => {
            let name = match k {
                ShowKind::Attention => "Needs attention",
                ShowKind::Running => "Running",
                ShowKind::Done => "Done",
                ShowKind::Idle => "Idle",
            };
            format!("  {} {name}", check(o.show.get(k)))
        }
        MenuItem::Grouping => format!("Group by  {}", o.grouping.label()),
        MenuItem::Sort => format!("Sort      {}", o.sort.label()),
        MenuItem::Display(s) => {
            let (on, name) = match s {
                Switch::Description => (o.display.description, "Description"),
                Switch::WaitingReason => (o.display.waiting_reason, "Waiting reason"),
                Switch::Progress => (o.display.progress, "Progress"),
                Switch::Subtasks => (o.display.subtasks, "Subtasks"),
            };
            format!("  {} {name}", check(on))
        }
        MenuItem::Reload => "Reload detection rules".to_string(),
    }
}

/// Applies an item to the model.
pub fn choose(m: &mut PanelModel, item: MenuItem) -> Chosen {
    let o = &mut m.options;
    match item {
        MenuItem::Show(k) => {
            if !o.show.toggle(k) {
                m.status = Some("The last shown kind cannot be hidden.".to_string());
                return Chosen::Refused;
            }
        }
        MenuItem::Grouping => o.grouping = o.grouping.next(),
        MenuItem::Sort => o.sort = o.sort.next(),
        MenuItem::Display(s) => {
            let d = &mut o.display;
            let slot = match s {
                Switch::Description => &mut d.description,
                Switch::WaitingReason => &mut d.waiting_reason,
                Switch::Progress => &mut d.progress,
                Switch::Subtasks => &mut d.subtasks,
            };
            *slot = !*slot;
        }
        MenuItem::Reload => {
            m.reload_pending = true;
            m.status = Some("Reloading detection rules…".to_string());
            return Chosen::Reload;
        }
    }
    m.fix_selection();
    Chosen::OptionsChanged
}

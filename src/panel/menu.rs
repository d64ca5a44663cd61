//! The view menu (S5.8): show checkboxes, the machines (this computer and each connected one;
//! only when agents are on several machines or one is hidden), grouping, sort, the four display
//! switches and "reload detection rules" (which reloads this computer's rules only, S9.3).

use super::model::PanelModel;
use super::options::ShowKind;

/// One choosable line of the menu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MenuItem {
    /// A show checkbox.
    Show(ShowKind),
    /// A machine's checkbox (its index in the snapshot's machines list).
    Machine(usize),
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
pub fn items(m: &PanelModel) -> Vec<MenuItem> {
    let mut out = vec![
        MenuItem::Show(ShowKind::Attention),
        MenuItem::Show(ShowKind::Running),
        MenuItem::Show(ShowKind::Done),
        MenuItem::Show(ShowKind::Idle),
    ];
    if m.machines_menu() {
        out.extend((0..m.machines.len()).map(MenuItem::Machine));
    }
    out.extend([
        MenuItem::Grouping,
        MenuItem::Sort,
        MenuItem::Display(Switch::Description),
        MenuItem::Display(Switch::WaitingReason),
        MenuItem::Display(Switch::Progress),
        MenuItem::Display(Switch::Subtasks),
        MenuItem::Reload,
    ]);
    out
}

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

/// The section heading shown above item `i` of `items`, if it opens a section.
pub fn section(items: &[MenuItem], i: usize) -> Option<&'static str> {
    let kind = |it: &MenuItem| match it {
        MenuItem::Show(_) => 0,
        MenuItem::Machine(_) => 1,
        MenuItem::Grouping | MenuItem::Sort => 2,
        MenuItem::Display(_) => 3,
        MenuItem::Reload => 4,
    };
    let k = kind(items.get(i)?);
    if i > 0 && items.get(i - 1).map(kind) == Some(k) {
        return None;
    }
    match k {
        0 => Some("Show"),
        1 => Some("Machines"),
        3 => Some("Display"),
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
        MenuItem::Machine(i) => match m.machines.get(i) {
            Some(mc) => {
                let shown = !o.hidden_machines.contains(&mc.name);
                let how = match (mc.local, mc.reachable) {
                    (true, _) => " (this computer)",
                    (false, true) => "",
                    (false, false) => " (unreachable)",
                };
                format!("  {} {}{how}", check(shown), mc.name)
            }
            None => String::new(),
        },
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
        MenuItem::Machine(i) => {
            let Some(name) = m.machines.get(i).map(|mc| mc.name.clone()) else {
                return Chosen::Refused;
            };
            if let Some(at) = o.hidden_machines.iter().position(|h| *h == name) {
                o.hidden_machines.remove(at);
            } else {
                let shown = m.machines.len() - o.hidden_machines.len();
                if shown <= 1 {
                    m.status = Some("The last shown machine cannot be hidden.".to_string());
                    return Chosen::Refused;
                }
                o.hidden_machines.push(name);
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

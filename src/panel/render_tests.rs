//! Rendering tests on ratatui's TestBackend: cards, icons, state words, grouping, empty lists.

use ratatui::{backend::TestBackend, Terminal};

use super::model::PanelModel;
use super::options::{Grouping, ViewOptions};
use crate::ids::{PaneId, SessionId, WindowId};
use crate::ipc::schema::{PaneRow, Reply, StateSource, WindowMark, SCHEMA_VERSION};
use crate::state::AgentState;

fn pane(id: u32, session: &str, state: Option<AgentState>, title: &str) -> PaneRow {
    PaneRow {
        pane: PaneId(id),
        window: WindowId(id),
        session: SessionId(1),
        session_name: session.into(),
        window_index: id,
        window_name: format!("Thread {id}"),
        pane_index: 0,
        title: title.into(),
        active: true,
        window_active: true,
        current_path: String::new(),
        current_command: "claude".into(),
        fg_pid: None,
        fg_process: None,
        fg_argv: vec![],
        process_less: false,
        agent: Some("soul".into()),
        agent_name: Some("Soul".into()),
        agent_mark: None,
        state,
        unseen_result: false,
        source: StateSource::ScreenRule,
        rule: None,
        message: None,
        report_title: None,
        kind: None,
        progress: None,
        subtasks: vec![],
        since_ms: 0,
        window_mark: WindowMark::Idle,
    }
}

fn screen(m: &PanelModel, w: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, 24)).expect("test terminal");
    t.draw(|f| super::render::draw(f, m, 0)).expect("draw");
    let buf = t.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                + "\n"
        })
        .collect()
}

fn model(panes: Vec<PaneRow>, o: ViewOptions) -> PanelModel {
    let mut m = PanelModel::new(o, None);
    m.apply(
        Reply::Snapshot {
            schema: SCHEMA_VERSION,
            panes,
            windows: vec![],
        },
        0,
    );
    m
}

#[test]
fn empty_and_all_hidden_messages() {
    assert!(screen(&model(vec![], ViewOptions::default()), 60).contains("No agents detected"));
    let mut o = ViewOptions::default();
    o.show.idle = false;
    let s = screen(
        &model(vec![pane(1, "p", Some(AgentState::Idle), "t")], o),
        60,
    );
    assert!(
        s.contains("All agents are hidden by the view options"),
        "{s}"
    );
}

#[test]
fn state_grouping_icons_and_words() {
    let panes = vec![
        pane(1, "proj", Some(AgentState::Idle), "resting"),
        pane(2, "proj", Some(AgentState::Blocked), "asks"),
        pane(3, "proj", None, "mystery"),
        pane(4, "proj", Some(AgentState::Error), "broke"),
    ];
    let s = screen(&model(panes.clone(), ViewOptions::default()), 60);
    assert!(s.contains("Needs attention  2"), "{s}");
    assert!(s.contains("◆ Soul · resting"), "{s}");
    assert!(s.contains("Idle · proj · Thread 1"), "{s}");
    assert!(s.contains("Unknown · proj · Thread 3"), "{s}");
    assert!(s.contains('⚠') && s.contains('✗') && s.contains('✓'), "{s}");
    assert!(s.find("asks") < s.find("resting"), "attention before idle");
    let s = screen(
        &model(
            panes,
            ViewOptions {
                grouping: Grouping::Session,
                ..Default::default()
            },
        ),
        40,
    );
    assert!(s.contains("1: Thread 1") && s.contains(" proj  4"), "{s}");
}

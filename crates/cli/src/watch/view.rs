//! Drawing the watch view with ratatui: a header (group, state, generation, leader), one row
//! per member with its tasks (tasks that moved recently highlighted), and the list of moves
//! with how long each task was unowned.

use std::io;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, Paragraph, Row, Table, Wrap};
use ratatui::{DefaultTerminal, Frame};

use super::model::Move;
use crate::describe::GroupView;

/// How long a moved task stays highlighted.
const HIGHLIGHT: Duration = Duration::from_secs(5);

/// What one frame shows.
#[derive(Debug)]
pub(crate) struct Screen<'a> {
    /// The first line (what is being watched).
    pub title: String,
    /// The latest description, if any arrived.
    pub view: Option<&'a GroupView>,
    /// The latest error describing the group, if the last attempt failed.
    pub error: Option<&'a str>,
    /// Every move so far, oldest first.
    pub moves: &'a [Move],
    /// Tasks without an owner now, with the time since.
    pub unowned: &'a [(String, Duration)],
    /// Extra lines under the header (the demo's progress).
    pub notes: &'a [String],
    /// The instant the frame is drawn at.
    pub now: Instant,
}

/// The terminal while the view is shown; restored when dropped.
#[derive(Debug)]
pub(crate) struct Ui {
    terminal: DefaultTerminal,
}

impl Ui {
    /// Switches the terminal to the full-screen view.
    ///
    /// # Errors
    /// When the terminal cannot be put in raw mode (not a terminal).
    pub(crate) fn start() -> io::Result<Self> {
        Ok(Self {
            terminal: ratatui::try_init()?,
        })
    }

    /// Draws one frame.
    ///
    /// # Errors
    /// When writing to the terminal fails.
    pub(crate) fn draw(&mut self, screen: &Screen<'_>) -> io::Result<()> {
        self.terminal
            .draw(|frame| render(frame, screen))
            .map(|_| ())
    }

    /// Whether the user asked to quit (q, Esc or ctrl-c) since the last call; never blocks.
    ///
    /// # Errors
    /// When reading terminal events fails.
    pub(crate) fn quit_requested(&mut self) -> io::Result<bool> {
        while event::poll(Duration::ZERO)? {
            if let Event::Key(key) = event::read()?
                && key.kind == KeyEventKind::Press
            {
                let ctrl_c =
                    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
                if ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Esc) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// Renders `screen` into `frame`.
pub(crate) fn render(frame: &mut Frame<'_>, screen: &Screen<'_>) {
    let header_lines = 2 + screen.notes.len() as u16 + u16::from(screen.error.is_some());
    let [header, members, moves, footer] = Layout::vertical([
        Constraint::Length(header_lines + 2),
        Constraint::Min(5),
        Constraint::Length(10),
        Constraint::Length(1),
    ])
    .areas(frame.area());

    let mut lines = vec![Line::from(Span::styled(
        screen.title.clone(),
        Style::new().add_modifier(Modifier::BOLD),
    ))];
    lines.push(Line::from(match screen.view {
        Some(v) => format!(
            "state {}   protocol {}/{}   generation {}   members {}",
            v.state,
            v.protocol_type.as_deref().unwrap_or("-"),
            v.protocol.as_deref().unwrap_or("-"),
            v.generation.map_or("-".into(), |g| g.to_string()),
            v.members.len()
        ),
        None => "waiting for the first description…".into(),
    }));
    lines.extend(screen.notes.iter().map(|n| Line::from(n.as_str())));
    if let Some(error) = screen.error {
        lines.push(Line::from(Span::styled(
            error.to_owned(),
            Style::new().fg(Color::Red),
        )));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(Block::bordered().title(" kroupier watch ")),
        header,
    );

    let recent = |task: &str| {
        screen
            .moves
            .iter()
            .any(|m| m.task == task && screen.now.saturating_duration_since(m.at) < HIGHLIGHT)
    };
    let rows = screen.view.into_iter().flat_map(|v| {
        v.members.iter().map(move |m| {
            let leader = v.leader.as_deref() == Some(m.member_id.as_str());
            let mut spans = Vec::new();
            match &m.tasks {
                None => spans.push(Span::raw("(not decoded)")),
                Some(tasks) => {
                    for task in tasks {
                        let style = if recent(task) {
                            Style::new()
                                .fg(Color::Black)
                                .bg(Color::Yellow)
                                .add_modifier(Modifier::BOLD)
                        } else {
                            Style::new()
                        };
                        spans.push(Span::styled(task.clone(), style));
                        spans.push(Span::raw(" "));
                    }
                }
            }
            Row::new(vec![
                Line::from(format!("{}{}", m.name(), if leader { " ★" } else { "" })),
                Line::from(m.tasks.as_ref().map_or("-".into(), |t| t.len().to_string())),
                Line::from(spans),
            ])
        })
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(24),
            Constraint::Length(6),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(vec!["worker (★ leader)", "tasks", ""])
            .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" members "));
    frame.render_widget(table, members);

    let mut items: Vec<ListItem<'_>> = screen
        .unowned
        .iter()
        .map(|(task, for_)| {
            ListItem::new(format!("{task}: no owner for {}", secs(*for_)))
                .style(Style::new().fg(Color::Red))
        })
        .collect();
    items.extend(screen.moves.iter().rev().map(|m| {
        let style = if screen.now.saturating_duration_since(m.at) < HIGHLIGHT {
            Style::new().fg(Color::Yellow)
        } else {
            Style::new()
        };
        let gap = if m.unowned_for.is_zero() {
            // Both snapshots showed an owner: the handover fell between two polls.
            "handed over between two polls".to_owned()
        } else {
            format!("unowned {}", secs(m.unowned_for))
        };
        ListItem::new(format!("{}: {} → {} ({gap})", m.task, m.from, m.to)).style(style)
    }));
    frame.render_widget(
        List::new(items).block(Block::bordered().title(" moves (newest first) ")),
        moves,
    );
    frame.render_widget(Paragraph::new("q quits"), footer);
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::group_view::MemberView;

    fn member(id: &str, tasks: &[&str]) -> MemberView {
        MemberView {
            member_id: format!("m-{id}"),
            instance_id: None,
            client_id: format!("kroupier-{id}"),
            host: "/127.0.0.1".into(),
            tasks: Some(tasks.iter().map(|t| t.to_string()).collect()),
            worker_id: Some(id.to_owned()),
        }
    }

    #[test]
    fn renders_members_leader_moves_and_unowned_tasks() {
        let now = Instant::now();
        let view = GroupView {
            group: "g".into(),
            state: "Stable".into(),
            generation: Some(3),
            protocol_type: Some("kroupier".into()),
            protocol: Some("cooperative".into()),
            leader: Some("m-worker-1".into()),
            members: vec![
                member("worker-1", &["task-0", "task-1"]),
                member("worker-2", &["task-2"]),
            ],
            unplaced: Default::default(),
        };
        let moves = [Move {
            task: "task-1".into(),
            from: "worker-0".into(),
            to: "worker-1".into(),
            at: now,
            unowned_for: Duration::from_millis(3010),
        }];
        let unowned = [("task-3".to_string(), Duration::from_millis(1500))];
        let notes = ["+  5.1s SIGKILL worker-0".to_string()];
        let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
        terminal
            .draw(|frame| {
                render(
                    frame,
                    &Screen {
                        title: "group g at 127.0.0.1:9092".into(),
                        view: Some(&view),
                        error: None,
                        moves: &moves,
                        unowned: &unowned,
                        notes: &notes,
                        now,
                    },
                )
            })
            .unwrap();
        let buffer = terminal.backend().buffer();
        let text: String = (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    + "\n"
            })
            .collect();
        for expected in [
            "state Stable   protocol kroupier/cooperative   generation 3   members 2",
            "SIGKILL worker-0",
            "worker-1 ★",
            "task-1: worker-0 → worker-1 (unowned 3.01 s)",
            "task-3: no owner for 1.50 s",
            "q quits",
        ] {
            assert!(text.contains(expected), "missing `{expected}` in\n{text}");
        }
        // The moved task is highlighted, a task that stayed is not.
        let find = |needle: &str| {
            let (y, line) = text
                .lines()
                .enumerate()
                .find(|(_, l)| l.contains("worker-1 ★"))
                .unwrap();
            let x = line[..line.find(needle).unwrap()].chars().count();
            buffer[(x as u16, y as u16)].bg
        };
        assert_eq!(find("task-1"), Color::Yellow);
        assert_ne!(find("task-0"), Color::Yellow);
    }
}

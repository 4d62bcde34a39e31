//! `send-once tui`: the review and reconciliation screen.
//!
//! `App` (state and `update`), `keymap` (one table of keys), `view` (drawing) and
//! `action` (what comes in, what goes out) are pure; this module is the runtime that
//! reads the terminal, runs effects on the ledger off the UI's path, watches the
//! ledger for changes by others, and feeds everything back as actions.

pub mod action;
pub mod app;
pub mod demo;
pub mod keymap;
pub mod terminal;
pub mod theme;
pub mod view;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{self, Event};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::approval::Ttl;
use crate::ledger::sqlite::Access;
use crate::ledger::{
    Clock, Ledger, LedgerError, LedgerLocation, ResolveDetails, Status, Store, StoreError,
};
use crate::review::{Review, Verdict};
use action::{Action, Effect};
use app::{App, Options};

/// How often ages move and the ledger is checked for changes by others.
const TICK: Duration = Duration::from_millis(500);

pub struct UiOptions {
    pub ledger: LedgerLocation,
    /// Who decides: `--by`, `SEND_ONCE_USER` or the OS user.
    pub by: String,
    pub older_than_ms: f64,
    pub clock: Clock,
}

/// What effects run against.
#[derive(Clone)]
struct Backend {
    store: Arc<dyn Store>,
    ledger: Ledger,
    review: Option<Arc<Review>>,
}

fn open(options: &UiOptions) -> Result<(Backend, Option<String>), StoreError> {
    let location = &options.ledger;
    if let LedgerLocation::Jsonl(path) = location {
        let store = location.open_store(Access::ReadWrite)?;
        let ledger = Ledger::with_clock(Arc::clone(&store), Arc::clone(&options.clock));
        let why = format!(
            "{} is a JSON Lines ledger. The review queue lives in SQLite ledgers (a .db file), so there is nothing to approve here; unknown sends and the ledger are in views 2 and 3.",
            path.display()
        );
        return Ok((
            Backend {
                store,
                ledger,
                review: None,
            },
            Some(why),
        ));
    }
    // A ledger on a read-only filesystem can still be looked at; decisions will say
    // they cannot be recorded.
    let sqlite = match location.open_sqlite(Access::ReadWrite) {
        Err(StoreError::ReadOnly(_)) => Arc::new(location.open_sqlite(Access::ReadOnly)?),
        other => Arc::new(other?),
    };
    let store: Arc<dyn Store> = sqlite.clone();
    let ledger = Ledger::with_clock(Arc::clone(&store), Arc::clone(&options.clock));
    let review = Review::new(sqlite, Arc::clone(&options.clock));
    Ok((
        Backend {
            store,
            ledger,
            review: Some(Arc::new(review)),
        },
        None,
    ))
}

/// Runs the UI until the person quits. The terminal is restored however it ends.
pub fn run(options: UiOptions) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start: {e}"))?;
    runtime.block_on(run_async(options))
}

async fn run_async(options: UiOptions) -> Result<(), String> {
    let (backend, no_queue) = open(&options).map_err(|e| e.to_string())?;
    let (tx, mut rx) = unbounded_channel::<Action>();

    let mut guard =
        terminal::TerminalGuard::enter().map_err(|e| format!("cannot use the terminal: {e}"))?;
    let size = guard.terminal.size().map_err(|e| e.to_string())?;
    let theme = theme::Theme::from_env();
    let mut app = App::new(Options {
        ledger_label: options.ledger.to_string(),
        by: options.by.clone(),
        older_than_ms: options.older_than_ms,
        no_queue,
        now: (options.clock)(),
    });
    app.size = (size.width, size.height);

    spawn_input(tx.clone());
    spawn_watcher(backend.clone(), Arc::clone(&options.clock), tx.clone());

    let hooks = TestHooks::from_env();
    let started = std::time::Instant::now();
    let mut in_flight: HashSet<&'static str> = HashSet::new();
    let (done_tx, mut done_rx) = unbounded_channel::<&'static str>();
    for effect in app.start() {
        run_effect(effect, &backend, &tx, &done_tx, &mut in_flight);
    }
    draw(&mut guard, &app, &theme)?;
    hooks.after_first_draw()?;
    loop {
        tokio::select! {
            Some(kind) = done_rx.recv() => {
                in_flight.remove(kind);
                continue;
            }
            action = rx.recv() => {
                let Some(action) = action else { break };
                let mut effects = app.update(action);
                // Take in everything already waiting before drawing once.
                while let Ok(more) = rx.try_recv() {
                    effects.extend(app.update(more));
                }
                for effect in effects {
                    run_effect(effect, &backend, &tx, &done_tx, &mut in_flight);
                }
                if app.quit {
                    break;
                }
                draw(&mut guard, &app, &theme)?;
                if hooks.exit_when_loaded && app.loaded() {
                    drop(guard);
                    eprintln!(
                        "send-once: first full frame after {} ms",
                        started.elapsed().as_millis()
                    );
                    return Ok(());
                }
            }
        }
    }
    drop(guard);
    Ok(())
}

/// Switches for tests and benchmarks, read from the environment (undocumented for
/// users): `SEND_ONCE_TUI_FAULT=panic|error` fails right after the first frame, to
/// prove the terminal is restored; `SEND_ONCE_TUI_EXIT_WHEN_LOADED=1` quits once every
/// view's data has arrived and been drawn, printing how long that took.
struct TestHooks {
    fault: Option<String>,
    exit_when_loaded: bool,
}

impl TestHooks {
    fn from_env() -> TestHooks {
        TestHooks {
            fault: std::env::var("SEND_ONCE_TUI_FAULT").ok(),
            exit_when_loaded: std::env::var_os("SEND_ONCE_TUI_EXIT_WHEN_LOADED").is_some(),
        }
    }

    fn after_first_draw(&self) -> Result<(), String> {
        match self.fault.as_deref() {
            Some("panic") => panic!("SEND_ONCE_TUI_FAULT=panic: a panic on purpose"),
            Some("error") => Err("SEND_ONCE_TUI_FAULT=error: an error on purpose".into()),
            _ => Ok(()),
        }
    }
}

fn draw(
    guard: &mut terminal::TerminalGuard,
    app: &App,
    theme: &theme::Theme,
) -> Result<(), String> {
    guard
        .terminal
        .draw(|frame| view::draw(frame, app, theme))
        .map(|_| ())
        .map_err(|e| format!("cannot draw: {e}"))
}

/// Terminal events, read on a thread of their own so the UI never waits on them.
fn spawn_input(tx: UnboundedSender<Action>) {
    std::thread::spawn(move || {
        while !tx.is_closed() {
            match event::poll(Duration::from_millis(100)) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => break,
            }
            let action = match event::read() {
                Ok(Event::Key(key)) => Action::Key(key),
                Ok(Event::Mouse(mouse)) => Action::Mouse(mouse),
                Ok(Event::Resize(w, h)) => Action::Resize(w, h),
                Ok(_) => continue,
                Err(_) => break,
            };
            if tx.send(action).is_err() {
                break;
            }
        }
    });
}

/// Moves the clock on, and says when the ledger changed (whoever changed it).
fn spawn_watcher(backend: Backend, clock: Clock, tx: UnboundedSender<Action>) {
    tokio::spawn(async move {
        let mut last = backend.store.change_marker().await.ok().flatten();
        let mut interval = tokio::time::interval(TICK);
        loop {
            interval.tick().await;
            if tx.send(Action::Tick(clock())).is_err() {
                break;
            }
            let marker = backend.store.change_marker().await.ok().flatten();
            if marker.is_none() || marker != last {
                last = marker;
                if tx.send(Action::Changed).is_err() {
                    break;
                }
            }
        }
    });
}

/// The kind of a load, so the same load is not started twice while one runs.
fn load_kind(effect: &Effect) -> Option<&'static str> {
    match effect {
        Effect::LoadApprovals => Some("approvals"),
        Effect::LoadUnknown => Some("unknown"),
        Effect::LoadCounts => Some("counts"),
        _ => None,
    }
}

fn run_effect(
    effect: Effect,
    backend: &Backend,
    tx: &UnboundedSender<Action>,
    done: &UnboundedSender<&'static str>,
    in_flight: &mut HashSet<&'static str>,
) {
    if effect == Effect::Quit {
        return;
    }
    let kind = load_kind(&effect);
    if let Some(kind) = kind
        && !in_flight.insert(kind)
    {
        return;
    }
    let (backend, tx, done) = (backend.clone(), tx.clone(), done.clone());
    tokio::spawn(async move {
        let action = perform(effect, &backend).await;
        if let Some(kind) = kind {
            let _ = done.send(kind);
        }
        if let Some(action) = action {
            let _ = tx.send(action);
        }
    });
}

/// Does the work an effect asks for and says what came of it.
async fn perform(effect: Effect, backend: &Backend) -> Option<Action> {
    let review = backend.review.clone();
    let no_queue = || "this ledger has no review queue".to_owned();
    Some(match effect {
        Effect::Quit => return None,
        Effect::LoadApprovals => Action::ApprovalsLoaded(match review {
            Some(review) => review.queue().await.map_err(|e| e.to_string()),
            None => Err(no_queue()),
        }),
        Effect::LoadUnknown => Action::UnknownLoaded(unknown_sends(&backend.store).await),
        Effect::LoadLedger(query) => {
            let result = backend.store.page(&query).await.map_err(|e| e.to_string());
            Action::LedgerLoaded { query, result }
        }
        Effect::LoadCounts => {
            Action::CountsLoaded(backend.store.counts().await.map_err(|e| e.to_string()))
        }
        Effect::Approve {
            id,
            revision,
            ttl,
            by,
            note,
        } => {
            let Some(review) = review else {
                return Some(failed(no_queue()));
            };
            let verdict = Verdict::Approve {
                ttl: Ttl::Text(ttl),
                revision: Some(revision),
            };
            match review.decide(id, verdict, Some(by), note).await {
                Ok(draft) => Action::Done {
                    message: format!(
                        "Approved draft {id} (revision {revision}) until {}.",
                        draft
                            .approval
                            .as_ref()
                            .and_then(|a| a["expiresAt"].as_str())
                            .unwrap_or("?")
                    ),
                    ok: true,
                },
                Err(e) => failed(e.to_string()),
            }
        }
        Effect::Reject { id, reason, by } => {
            let Some(review) = review else {
                return Some(failed(no_queue()));
            };
            match review
                .decide(
                    id,
                    Verdict::Reject {
                        reason: reason.clone(),
                    },
                    Some(by),
                    Some(reason),
                )
                .await
            {
                Ok(_) => Action::Done {
                    message: format!("Rejected draft {id}."),
                    ok: true,
                },
                Err(e) => failed(e.to_string()),
            }
        }
        Effect::Recheck { id } => {
            let Some(review) = review else {
                return Some(failed(no_queue()));
            };
            match review
                .recheck(id, crate::review::recheck::DEFAULT_TIMEOUT)
                .await
            {
                Ok(_) => {
                    let summary = review
                        .head(id)
                        .await
                        .map(|d| d.drift().summary())
                        .unwrap_or_default();
                    Action::Done {
                        message: format!("Rechecked draft {id}: {summary}."),
                        ok: true,
                    }
                }
                Err(e) => failed(format!("Draft {id}: {e}")),
            }
        }
        Effect::Resolve {
            key,
            status,
            by,
            note,
            provider_id,
        } => {
            let details = ResolveDetails {
                by: Some(by),
                note,
                provider_id,
            };
            let short = app::short_key(&key);
            match backend.ledger.resolve(&key, status, &details).await {
                Ok(resolved) if resolved.changed => Action::Done {
                    message: format!(
                        "Marked {short} {}. {}",
                        status.as_str(),
                        if status == Status::Sent {
                            "It will not be sent again."
                        } else {
                            "The next attempt for this key will send it."
                        }
                    ),
                    ok: true,
                },
                Ok(resolved) => failed(format!(
                    "{short} was already {}{}; nothing changed.",
                    resolved.entry.status().as_str(),
                    resolution_by(&resolved.entry)
                )),
                Err(LedgerError::AlreadySent(_)) => {
                    let by = match backend.ledger.get(&key).await {
                        Ok(Some(entry)) => resolution_by(&entry),
                        _ => String::new(),
                    };
                    failed(format!(
                        "{short} is already recorded as sent{by}; it cannot be marked failed. Nothing changed."
                    ))
                }
                Err(e) => failed(e.to_string()),
            }
        }
    })
}

/// Every pending entry, oldest claim first. Unlike the audit (which matches the Node
/// CLI), one whose claim time cannot be read is listed too, last: it is still a send
/// whose fate is unknown.
async fn unknown_sends(store: &Arc<dyn Store>) -> Result<Vec<crate::ledger::Entry>, String> {
    let mut pending = store
        .list(crate::ledger::ListFilter {
            status: Some(Status::Pending),
        })
        .await
        .map_err(|e| e.to_string())?;
    pending.retain(|e| e.status() == Status::Pending);
    pending.sort_by_key(|e| crate::ledger::time::parse_date(e.claimed_at()).unwrap_or(i64::MAX));
    Ok(pending)
}

/// " (by dana at ...)" when an entry was settled by a person.
fn resolution_by(entry: &crate::ledger::Entry) -> String {
    match entry.get("resolution") {
        Some(serde_json::Value::Object(r)) => format!(
            " (by {} at {})",
            r.get("by").and_then(|v| v.as_str()).unwrap_or("?"),
            r.get("at").and_then(|v| v.as_str()).unwrap_or("?")
        ),
        _ => String::new(),
    }
}

fn failed(message: String) -> Action {
    Action::Done { message, ok: false }
}

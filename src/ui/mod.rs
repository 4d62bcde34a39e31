//! `send-once tui`: the review and reconciliation screen.
//!
//! `App` (state and `update`), `keymap` (one table of keys), `view` (drawing) and
//! `action` (what comes in, what goes out) are pure; this module is the runtime that
//! reads the terminal, runs effects on the ledger off the UI's path, watches the
//! ledger for changes by others (and for its file being deleted or replaced), ends on
//! a signal as on `q`, and feeds everything back as actions.

pub mod action;
pub mod app;
pub mod config;
pub mod demo;
pub mod editor;
pub mod forms;
pub mod keymap;
pub mod layout;
pub mod page;
pub mod state;
pub mod terminal;
pub mod theme;
pub mod verify;
pub mod view;
mod watch;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crossterm::event::{self, Event};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::approval::Ttl;
use crate::ledger::{
    Clock, Ledger, LedgerError, LedgerLocation, ResolveDetails, Store, StoreError,
};
use crate::open::Open;
use crate::review::{Review, Verdict};
use action::{Action, Effect, Outcome};
use app::{App, Options};
use watch::{Current, Opened, Watcher, not_there, open_file};

/// How often ages move and the ledger is checked for changes by others.
const TICK: Duration = Duration::from_millis(500);

pub struct UiOptions {
    pub ledger: LedgerLocation,
    /// Who decides: `--by`, `SEND_ONCE_USER` or the OS user.
    pub by: String,
    pub older_than_ms: i64,
    pub clock: Clock,
    /// Where to open (`--view`, `--key`).
    pub start: app::Start,
    /// The verify commands `v` runs (`--verify`, the config file), never the ledger's.
    pub verify: config::VerifySetup,
}

impl UiOptions {
    /// The ledger's file, which the watcher looks at. A Postgres location has none and
    /// is not watched as a file; its (redacted) text stands in here for messages.
    fn file_path(&self) -> PathBuf {
        match self.ledger.path() {
            Some(path) => path.to_owned(),
            None => PathBuf::from(self.ledger.to_string()),
        }
    }
}

/// What effects run against.
#[derive(Clone)]
struct Backend {
    store: Arc<dyn Store>,
    ledger: Ledger,
    review: Option<Arc<Review>>,
    /// Why every write would be refused, as the app says it (see
    /// [`App::writes_refused`]).
    writes_refused: Option<String>,
    /// The ledger as a command line names it, for a command to paste.
    label: String,
}

fn open(options: &UiOptions) -> Result<(Backend, Option<String>), StoreError> {
    let location = &options.ledger;
    let opened = location.open_to_look()?;
    let store = opened.store;
    let writes_refused = store.writes_refused().map(|e| match e {
        StoreError::ReadOnly(at) => format!("{at} is read-only here"),
        StoreError::DiskFull(at) => format!("the disk holding {at} is full"),
        other => other.to_string().trim_end_matches('.').to_owned(),
    });
    let ledger = Ledger::with_clock(Arc::clone(&store), Arc::clone(&options.clock));
    let Some(queue) = opened.queue else {
        let why = format!(
            "{location} is a JSON Lines ledger. The review queue lives in SQLite ledgers (a .db file), so there is nothing to approve here; unknown sends and the ledger are in views 2 and 3."
        );
        return Ok((
            Backend {
                store,
                ledger,
                review: None,
                writes_refused,
                label: location.to_string(),
            },
            Some(why),
        ));
    };
    let review = Review::new(queue, Arc::clone(&options.clock));
    Ok((
        Backend {
            store,
            ledger,
            review: Some(Arc::new(review)),
            writes_refused,
            label: location.to_string(),
        },
        None,
    ))
}

/// How the UI ended, when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The person quit.
    Quit,
    /// This signal asked it to end (the terminal is restored all the same); a shell
    /// reports it as exit status 128 + the number.
    Signal(i32),
}

/// Runs the UI until the person quits or a signal ends it. The terminal is restored
/// however it ends, and every edit that was not saved is named on stderr, in the file
/// it is kept in.
pub fn run(options: UiOptions) -> Result<Ended, String> {
    // Files of the editor that a UI killed with SIGKILL left behind (each holds a
    // payload, perhaps an edit saved after the kill): kept under a kept edit's name and
    // named when this run ends; never a running UI's.
    for (id, path) in editor::keep_stale_files(&std::env::temp_dir(), std::time::SystemTime::now())
    {
        KEPT_FILES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(KeptFile {
                id,
                digest: 0,
                path,
                failed: None,
                left_behind: true,
            });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start: {e}"))?;
    let ended = runtime.block_on(run_async(options));
    // Whatever is still running (a recheck command, a load) gets a moment, not an
    // open-ended wait: the person, or a signal, asked to leave.
    runtime.shutdown_timeout(Duration::from_secs(1));
    ended
}

/// The signals that end the UI as `q` does, so the terminal is given back; their
/// default action would end the process with the terminal still raw. Each also sets
/// `asked`, in the handler itself: while the editor has the terminal the loop that
/// reads the stream is waiting for it, and when the editor exits, whether the UI was
/// asked to end meanwhile must be known for sure, not when the stream gets to it.
fn watch_signals(asked: &Arc<AtomicUsize>) -> Result<UnboundedReceiver<i32>, String> {
    let (tx, rx) = unbounded_channel();
    for (kind, number) in [
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
        (SignalKind::interrupt(), libc::SIGINT),
        (SignalKind::quit(), libc::SIGQUIT),
        (SignalKind::user_defined1(), libc::SIGUSR1),
    ] {
        let mut stream = signal(kind).map_err(|e| format!("cannot watch for signals: {e}"))?;
        signal_hook::flag::register_usize(number, Arc::clone(asked), number as usize)
            .map_err(|e| format!("cannot watch for signals: {e}"))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(number).is_err() {
                    break;
                }
            }
        });
    }
    Ok(rx)
}

async fn run_async(options: UiOptions) -> Result<Ended, String> {
    let options = Arc::new(options);
    let (backend, no_queue, file) = open_file(&options)?;
    let current = Current::new(Opened {
        backend,
        file,
        generation: 0,
    });
    let (tx, mut rx) = unbounded_channel::<Action>();
    let asked_to_end = Arc::new(AtomicUsize::new(0));
    let mut signals = watch_signals(&asked_to_end)?;

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
    })
    .with_start(options.start.clone())
    .with_verify(options.verify.clone());
    app.size = (size.width, size.height);
    app.writes_refused = current.get().backend.writes_refused.clone();

    spawn_input(tx.clone());
    Watcher::spawn(current.clone(), Arc::clone(&options), tx.clone());

    let hooks = TestHooks::from_env();
    let started = std::time::Instant::now();
    let mut in_flight = Loads::default();
    let (done_tx, mut done_rx) = unbounded_channel::<LoadSlot>();
    let mut runner = Runner {
        current,
        path: options.file_path(),
        tx: tx.clone(),
        done: done_tx,
        shown: 0,
        clock: Arc::clone(&options.clock),
    };
    for effect in app.start() {
        runner.run(effect, 0, &mut in_flight);
    }
    if let Some(hung_up) = draw_unless_hung_up(&mut guard, &mut app, &theme)? {
        drop(guard);
        return Ok(hung_up);
    }
    hooks.after_first_draw()?;
    let mut ended = Ended::Quit;
    let mut failed = None;
    'ui: loop {
        tokio::select! {
            Some(number) = signals.recv() => {
                ended = Ended::Signal(number);
                break;
            }
            Some(slot) = done_rx.recv() => {
                in_flight.running.remove(&slot);
                // Asked for again while it ran: its answer may predate what was asked
                // about (a change someone made meanwhile), so it runs once more.
                if let Some((effect, shown)) = in_flight.again.remove(&slot) {
                    runner.run(effect, shown, &mut in_flight);
                }
                continue;
            }
            action = rx.recv() => {
                let Some(action) = action else { break };
                // A terminal that hung up without a SIGHUP reaching us (tmux killed
                // under a parent that ignores it) leaves crossterm's reader spinning
                // on the dead tty (crossterm-rs/crossterm#793): the UI ends as on a
                // SIGHUP instead of living on as an orphan.
                if matches!(action, Action::Tick(_)) && terminal::hung_up() {
                    ended = Ended::Signal(libc::SIGHUP);
                    break;
                }
                let mut resized = matches!(action, Action::Resize(..));
                let mut effects = Vec::new();
                runner.update(&mut app, action, &mut effects);
                // Take in everything already waiting before drawing once, but not past
                // a resize: what follows it meets the screen drawn at the new size, so
                // no key acts on a form the person cannot see yet.
                while !resized && let Ok(more) = rx.try_recv() {
                    resized = matches!(more, Action::Resize(..));
                    runner.update(&mut app, more, &mut effects);
                }
                if let Some(effect) = app.history_effect() {
                    effects.push((effect, runner.shown));
                }
                for (effect, shown) in effects {
                    match effect {
                        // These use the terminal itself, so they run here, in order.
                        Effect::Page { text, .. } => {
                            let result = tokio::task::block_in_place(|| {
                                terminal::run_pager(&mut guard, &text)
                            });
                            app.update(Action::Done(Outcome::Paged(result)));
                        }
                        Effect::Edit {
                            id,
                            revision,
                            version,
                            text,
                        } => {
                            let run = tokio::task::block_in_place(|| {
                                editor::run_editor(&mut guard, id, &text)
                            });
                            let asked = asked_to_end.load(Ordering::SeqCst);
                            if asked != 0 {
                                // Asked to end while the editor was open: what was saved
                                // is not sent now (nobody is there to see the answer),
                                // but kept in a file named at exit. The editor's exit
                                // status does not matter: a SIGHUP may have ended it.
                                if let Some(saved) = run.changed(&text) {
                                    let _ = keep_file(id, &String::from_utf8_lossy(saved));
                                }
                                ended = Ended::Signal(asked as i32);
                                break 'ui;
                            }
                            let more = app.update(Action::EditorClosed {
                                id,
                                revision,
                                version,
                                result: run.result(),
                            });
                            for effect in more {
                                runner.run(effect, shown, &mut in_flight);
                            }
                        }
                        Effect::Copy { what, text } => {
                            let outcome = match terminal::copy_to_clipboard(&mut guard, &text) {
                                Ok(()) => Outcome::Copied { what },
                                Err(why) => Outcome::Refused {
                                    subject: what,
                                    why: format!("Could not copy: {why}"),
                                },
                            };
                            app.update(Action::Done(outcome));
                        }
                        effect => runner.run(effect, shown, &mut in_flight),
                    }
                }
                if app.quit {
                    break;
                }
                match draw_unless_hung_up(&mut guard, &mut app, &theme) {
                    Ok(None) => {}
                    Ok(Some(hung_up)) => {
                        ended = hung_up;
                        break;
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
                if hooks.exit_when_loaded && app.loaded() {
                    drop(guard);
                    eprintln!(
                        "send-once: first full frame after {} ms",
                        started.elapsed().as_millis()
                    );
                    return Ok(Ended::Quit);
                }
            }
        }
    }
    // Edits kept only in memory (not JSON, a ledger that could not take them) go to
    // files before the terminal is given back, and every file an edit is kept in is
    // named after, where the shell shows it.
    for (id, kept) in app.unsaved_edits() {
        if kept_file_of(id, &kept.text).is_none() {
            let _ = keep_file(id, &kept.text);
        }
    }
    drop(guard);
    name_kept_files();
    match failed {
        Some(e) => Err(e),
        None => Ok(ended),
    }
}

/// One file an edit that was not saved is kept in, this run.
struct KeptFile {
    id: i64,
    /// A digest of the text, to tell whether an edit kept in memory is in it.
    digest: u64,
    path: PathBuf,
    /// Why it could not be written, if it could not.
    failed: Option<String>,
    /// Left by a UI that was killed while its editor was open, found at start.
    left_behind: bool,
}

/// Every file an edit was kept in while the UI ran, named on stderr when it ends.
static KEPT_FILES: Mutex<Vec<KeptFile>> = Mutex::new(Vec::new());

fn digest(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Keeps draft `id`'s edited `text` in a file of its own ([`editor::keep_edit`]),
/// remembered to be named when the UI ends.
fn keep_file(id: i64, text: &str) -> Result<PathBuf, String> {
    let kept = editor::keep_edit(id, text);
    let mut files = KEPT_FILES.lock().unwrap_or_else(PoisonError::into_inner);
    files.push(KeptFile {
        id,
        digest: digest(text),
        path: kept.clone().unwrap_or_default(),
        failed: kept.as_ref().err().cloned(),
        left_behind: false,
    });
    kept
}

/// The file this run kept draft `id`'s `text` in, if it did.
fn kept_file_of(id: i64, text: &str) -> Option<PathBuf> {
    let digest = digest(text);
    KEPT_FILES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|f| f.id == id && f.digest == digest && f.failed.is_none())
        .map(|f| f.path.clone())
}

/// Names on stderr every file an edit was kept in while the UI ran (the terminal is
/// the shell's again), so that nothing typed is lost once the status line is gone.
fn name_kept_files() {
    use std::io::Write as _;
    let files = KEPT_FILES.lock().unwrap_or_else(PoisonError::into_inner);
    let mut stderr = std::io::stderr().lock();
    for file in files.iter() {
        // Not eprintln!, which panics when stderr is gone (the terminal hung up).
        let _ = match &file.failed {
            None if file.left_behind => writeln!(
                stderr,
                "send-once: the editor's file for draft {} left by a send-once tui that was killed (it may hold an edit saved after) is kept in {}",
                file.id,
                crate::text::visible_inline(&file.path.display().to_string())
            ),
            None => writeln!(
                stderr,
                "send-once: an edit of draft {} that was not saved is kept in {}",
                file.id,
                crate::text::visible_inline(&file.path.display().to_string())
            ),
            Some(why) => writeln!(
                stderr,
                "send-once: an edit of draft {} that was not saved could not be kept in a file: {}",
                file.id,
                crate::text::visible_inline(why)
            ),
        };
    }
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

/// Draws a frame, and keeps the app's size to the one drawn: the keys' size guard
/// must judge the screen the person sees, even before its resize event arrives.
/// Draws, and when the draw fails because the terminal hung up (between two ticks,
/// before the tick's check sees it), says the UI ends as on a SIGHUP, as that check
/// does, rather than failing.
fn draw_unless_hung_up(
    guard: &mut terminal::TerminalGuard,
    app: &mut App,
    theme: &theme::Theme,
) -> Result<Option<Ended>, String> {
    match draw(guard, app, theme) {
        Ok(()) => Ok(None),
        Err(_) if terminal::hung_up() => Ok(Some(Ended::Signal(libc::SIGHUP))),
        Err(e) => Err(e),
    }
}

fn draw(
    guard: &mut terminal::TerminalGuard,
    app: &mut App,
    theme: &theme::Theme,
) -> Result<(), String> {
    let area = guard
        .terminal
        .draw(|frame| view::draw(frame, app, theme))
        .map_err(|e| format!("cannot draw: {e}"))?
        .area;
    if (area.width, area.height) != app.size {
        app.update(Action::Resize(area.width, area.height));
    }
    Ok(())
}

/// Terminal events, read on a thread of their own so the UI never waits on them.
/// While a pager runs, it waits for its turn (crossterm's poll would read the
/// pager's keys).
fn spawn_input(tx: UnboundedSender<Action>) {
    std::thread::spawn(move || {
        while !tx.is_closed() {
            let _turn = terminal::input_turn();
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

/// A kind of load against one opening of the ledger, so the same load is not started
/// twice while one runs.
type LoadSlot = (&'static str, u64);

/// The loads running, one a kind (and ledger file), and the one asked for while each
/// ran, which runs when it ends: a change reported while a load was reading is never
/// dropped, and a ledger page never shows an older read over a newer one.
#[derive(Default)]
struct Loads {
    running: HashSet<LoadSlot>,
    again: HashMap<LoadSlot, (Effect, u64)>,
}

fn load_kind(effect: &Effect) -> Option<&'static str> {
    match effect {
        Effect::LoadApprovals => Some("approvals"),
        Effect::LoadUnknown => Some("unknown"),
        Effect::LoadLedger(_) => Some("ledger"),
        Effect::LoadCounts => Some("counts"),
        Effect::LoadDecisions => Some("decisions"),
        Effect::CheckChain => Some("chain"),
        Effect::LoadHistory(_) => Some("history"),
        Effect::LoadDraft(_) => Some("draft"),
        _ => None,
    }
}

/// Runs effects off the UI's path and sends back what came of them.
struct Runner {
    current: Current,
    path: PathBuf,
    tx: UnboundedSender<Action>,
    done: UnboundedSender<LoadSlot>,
    /// Which opening of the ledger the app has been told of (and so has shown).
    shown: u64,
    /// The UI's clock, so that an answer is stamped when it came, not at the last tick.
    clock: Clock,
}

impl Runner {
    /// Hands `action` to the app, keeping each effect with the opening of the ledger
    /// the app knew of when it asked for it.
    fn update(&mut self, app: &mut App, action: Action, effects: &mut Vec<(Effect, u64)>) {
        if matches!(action, Action::LedgerBack { reopened: true }) {
            self.shown += 1;
            app.writes_refused = self.current.get().backend.writes_refused.clone();
        }
        let shown = self.shown;
        effects.extend(app.update(action).into_iter().map(|e| (e, shown)));
    }

    fn run(&self, effect: Effect, shown: u64, in_flight: &mut Loads) {
        if matches!(
            effect,
            Effect::Quit | Effect::Page { .. } | Effect::Copy { .. } | Effect::Edit { .. }
        ) {
            return;
        }
        if let Effect::Verify {
            key,
            entry,
            argv,
            timeout,
            by,
            command,
        } = effect
        {
            let tx = self.tx.clone();
            let clock = Arc::clone(&self.clock);
            let ledger = self.current.get().backend.ledger.clone();
            tokio::spawn(async move {
                let answer = verify(&key, &entry, &argv, &timeout).await;
                // Kept before it is shown, so a "happened" stands against marking the
                // attempt failed, here or on anyone's screen (K1).
                let kept = ledger
                    .record_verify(&entry, &by, &answer, Some(&command))
                    .await;
                // The answer's time is when it came (the note a person may record
                // says so), not the last tick's.
                let _ = tx.send(Action::Tick(clock()));
                let _ = tx.send(Action::Verified {
                    key: key.clone(),
                    seen: crate::ledger::Seen::entry(&entry),
                    answer,
                });
                if let Err(why) = kept {
                    let why = why.to_string();
                    let _ = tx.send(Action::VerifyNotKept { key, why });
                }
            });
            return;
        }
        let opened = self.current.get();
        // A decision confirmed before the app heard that another file was opened is
        // about the old one.
        let reopened_since = opened.generation != shown;
        let kind = load_kind(&effect);
        // Histories and drafts each answer a question of their own and run at once.
        // The rest run one at a time a kind: asked for while one runs, the newest ask
        // waits for it (a ledger page too: the screen drops an answer to a page no
        // longer shown, and shows the last one read).
        let slot = kind
            .filter(|k| !matches!(*k, "history" | "draft"))
            .map(|k| (k, opened.generation));
        if let Some(slot) = slot
            && !in_flight.running.insert(slot)
        {
            in_flight.again.insert(slot, (effect, shown));
            return;
        }
        let (current, path, tx, done) = (
            self.current.clone(),
            self.path.clone(),
            self.tx.clone(),
            self.done.clone(),
        );
        tokio::spawn(async move {
            let action = if kind.is_some() {
                let action = load(effect, &opened.backend).await;
                // A load that raced the file's deletion may have read nothing at all
                // (a JSON Lines ledger reads as empty): it must not show as "0 pending".
                match (action, not_there(&path, opened.file)) {
                    _ if current.get().generation != opened.generation => None,
                    (Some(action), Some(why)) => Some(failed_load(action, why)),
                    (action, None) => action,
                    (None, Some(_)) => None,
                }
            } else {
                let outcome = if reopened_since {
                    refused_all(
                        &effect,
                        format!(
                            "Refused, nothing was written: {} was replaced by another file just now. Look at it again and decide anew.",
                            path.display()
                        ),
                    )
                } else if let Some(why) = not_there(&path, opened.file) {
                    refused_all(&effect, format!("Refused, nothing was written: {why}."))
                } else {
                    let outcome = decide(effect, &opened.backend).await;
                    match not_there(&path, opened.file) {
                        Some(_) if outcome.ok() => Outcome::Refused {
                            subject: String::new(),
                            why: format!(
                                "It was written, but the ledger's file was deleted or replaced as this was written, so it may not be in {} now: look before deciding again.",
                                path.display()
                            ),
                        },
                        _ => outcome,
                    }
                };
                Some(Action::Done(outcome))
            };
            if let Some(slot) = slot {
                let _ = done.send(slot);
            }
            if let Some(action) = action {
                let _ = tx.send(action);
            }
        });
    }
}

/// Asks the verify command about `entry`. Its stderr is kept out of the screen (the
/// tail is in an inconclusive answer); past `timeout` its process group is killed.
async fn verify(
    key: &str,
    entry: &crate::ledger::Entry,
    argv: &[String],
    timeout: &crate::provider::Limit,
) -> crate::provider::CheckAnswer {
    use tracing::Instrument;
    let span = tracing::info_span!(
        "verify",
        key = %key,
        attempt = entry.attempts(),
        gate = "tui",
        outcome = tracing::field::Empty
    );
    let check = crate::provider::CheckCommand {
        kind: crate::provider::CheckKind::Verify,
        argv,
        timeout,
        echo_stderr: false,
    };
    let answer = check.ask(entry).instrument(span.clone()).await;
    span.record("outcome", answer.name());
    answer
}

/// The same refusal for a decision, or for every decision of a batch.
fn refused_all(effect: &Effect, why: String) -> Outcome {
    match effect {
        Effect::Batch(items) => Outcome::Batch(
            items
                .iter()
                .map(|item| refused_all(item, why.clone()))
                .collect(),
        ),
        // The edited text goes back with the refusal, for the next `e`.
        Effect::SaveEdit {
            id,
            key,
            revision,
            version,
            payload,
            ..
        } => not_saved_edit(*id, key, *revision, *version, why, payload),
        other => Outcome::Refused {
            subject: subject_of(other),
            why,
        },
    }
}

/// An edit that could not be saved, kept twice: for the next `e` on the same draft,
/// and in an owner-only file named in `why`, so that quitting (or another file
/// opened at the path) never loses it.
fn not_saved_edit(
    id: i64,
    key: &str,
    revision: i64,
    version: i64,
    why: String,
    payload: &str,
) -> Outcome {
    let why = why.trim_end_matches('.');
    let why = match keep_file(id, payload) {
        Ok(path) => format!("{why}; your edit is also kept in {}", path.display()),
        Err(e) => format!("{why}; your edit could not be kept in a file ({e})"),
    };
    Outcome::EditNotSaved {
        id,
        key: key.to_owned(),
        revision,
        version,
        why,
        kept: Some(payload.to_owned()),
    }
}

/// What a decision is about, as a refusal names it.
fn subject_of(effect: &Effect) -> String {
    match effect {
        Effect::Approve { id, .. }
        | Effect::Reject { id, .. }
        | Effect::Recheck { id }
        | Effect::SaveEdit { id, .. } => format!("draft {id}"),
        Effect::Resolve { key, .. } => key.clone(),
        _ => String::new(),
    }
}

/// A load's answer replaced by why it cannot be trusted.
fn failed_load(action: Action, why: String) -> Action {
    match action {
        Action::ApprovalsLoaded(_) => Action::ApprovalsLoaded(Err(why)),
        Action::UnknownLoaded(_) => Action::UnknownLoaded(Err(why)),
        Action::PendingLoaded { .. } => Action::PendingLoaded {
            entries: Err(why),
            unreadable: Vec::new(),
        },
        Action::LedgerLoaded { query, .. } => Action::LedgerLoaded {
            query,
            result: Err(why),
        },
        Action::CountsLoaded(_) => Action::CountsLoaded(Err(why)),
        Action::DecisionsLoaded(_) => Action::DecisionsLoaded(Err(why)),
        Action::ChainChecked(_) => Action::ChainChecked(Err(why)),
        Action::DraftLoaded { id, .. } => Action::DraftLoaded {
            id,
            result: Err(why),
        },
        Action::HistoryLoaded { subject, .. } => Action::HistoryLoaded {
            subject,
            result: Err(why),
        },
        other => other,
    }
}

/// Loads what a view shows.
async fn load(effect: Effect, backend: &Backend) -> Option<Action> {
    Some(match effect {
        Effect::LoadApprovals => Action::ApprovalsLoaded(match backend.review.clone() {
            Some(review) => review.queue().await.map_err(|e| e.to_string()),
            None => Err("this ledger has no review queue".to_owned()),
        }),
        Effect::LoadUnknown => match unknown_sends(&backend.store).await {
            Ok((entries, unreadable)) => Action::PendingLoaded {
                entries: Ok(entries),
                unreadable,
            },
            Err(why) => Action::UnknownLoaded(Err(why)),
        },
        Effect::LoadLedger(query) => {
            let result = backend.store.page(&query).await.map_err(|e| e.to_string());
            Action::LedgerLoaded { query, result }
        }
        Effect::LoadCounts => Action::CountsLoaded(counts(&backend.store).await),
        Effect::LoadDecisions => Action::DecisionsLoaded(newest_decisions(&backend.store).await),
        Effect::CheckChain => Action::ChainChecked(check_chain(&backend.store).await),
        Effect::LoadDraft(id) => Action::DraftLoaded {
            id,
            result: match backend.review.clone() {
                Some(review) => review
                    .draft(id)
                    .await
                    .map(Box::new)
                    .map_err(|e| e.to_string()),
                None => Err("this ledger has no review queue".to_owned()),
            },
        },
        Effect::LoadHistory(subject) => {
            let result = backend
                .store
                .decisions(Some(&subject))
                .await
                .map_err(|e| e.to_string());
            Action::HistoryLoaded { subject, result }
        }
        _ => return None,
    })
}

/// Verifies the whole decision log's chain, hashing off the async threads.
async fn check_chain(store: &Arc<dyn Store>) -> Result<crate::ledger::chain::Report, String> {
    crate::ledger::chain::verify_store(store)
        .await
        .map_err(|e| e.to_string())
}

/// The newest decisions, newest first.
async fn newest_decisions(
    store: &Arc<dyn Store>,
) -> Result<Vec<crate::ledger::decision::Decision>, String> {
    let query = crate::ledger::DecisionQuery {
        limit: app::DECISIONS_SHOWN,
        ..Default::default()
    };
    store
        .decisions_page(&query)
        .await
        .map_err(|e| e.to_string())
}

/// Makes a decision (or each of a batch, one after another) and says what came of it.
async fn decide(effect: Effect, backend: &Backend) -> Outcome {
    if let Effect::Batch(items) = effect {
        let mut outcomes = Vec::with_capacity(items.len());
        for item in items {
            outcomes.push(Box::pin(decide(item, backend)).await);
        }
        return Outcome::Batch(outcomes);
    }
    let subject = subject_of(&effect);
    let refused = |why: String| Outcome::Refused {
        subject: subject.clone(),
        why,
    };
    let review = backend.review.clone();
    let no_queue = || "this ledger has no review queue".to_owned();
    match effect {
        Effect::Approve {
            id,
            revision,
            version,
            ttl,
            by,
            note,
        } => {
            let Some(review) = review else {
                return refused(no_queue());
            };
            let verdict = Verdict::Approve {
                ttl: Ttl::Text(ttl),
                revision: Some(revision),
            };
            match review
                .decide_seen(id, verdict, Some(by), note, Some(version))
                .await
            {
                Ok(draft) if draft.needs_quorum() && !draft.tally(review.now()).complete => {
                    let tally = draft.tally(review.now());
                    Outcome::Voted {
                        id,
                        revision,
                        so_far: tally.label(),
                        missing: tally.missing(),
                    }
                }
                Ok(draft) => Outcome::Approved {
                    id,
                    revision,
                    expires_at: draft
                        .approval
                        .as_ref()
                        .and_then(|a| a["expiresAt"].as_str())
                        .unwrap_or("?")
                        .to_owned(),
                    approvers: draft.needs_quorum().then(|| {
                        let names = draft.tally(review.now());
                        (names.names().join(", "), names.votes.len())
                    }),
                },
                Err(e) => refused(e.to_string()),
            }
        }
        Effect::Reject {
            id,
            version,
            reason,
            by,
        } => {
            let Some(review) = review else {
                return refused(no_queue());
            };
            match review
                .decide_seen(
                    id,
                    Verdict::Reject {
                        reason: reason.clone(),
                    },
                    Some(by),
                    Some(reason),
                    Some(version),
                )
                .await
            {
                // A dispatch that claimed the key first may be sending: the reject is
                // written, and the screen says what it could not stop (N3).
                Ok(draft) => match review.ledger_entry(&draft.key).await {
                    Ok(Some(entry)) if entry.status() != crate::ledger::Status::Failed => {
                        refused(format!(
                            "Rejected draft {id}, but its key is {} (attempt {}, claimed at {}): a dispatch began before the rejection, so it may have gone out.",
                            entry.status().as_str(),
                            entry.attempts(),
                            crate::text::visible_inline(entry.claimed_at())
                        ))
                    }
                    _ => Outcome::Rejected { id },
                },
                Err(e) => refused(e.to_string()),
            }
        }
        Effect::Recheck { id } => {
            let Some(review) = review else {
                return refused(no_queue());
            };
            match review
                .recheck(id, crate::review::recheck::DEFAULT_TIMEOUT)
                .await
            {
                Ok(_) => Outcome::Rechecked {
                    id,
                    summary: review
                        .head(id)
                        .await
                        .map(|d| d.drift().summary())
                        .unwrap_or_default(),
                },
                Err(e) => refused(format!("Draft {id}: {e}")),
            }
        }
        Effect::SaveEdit {
            id,
            key,
            revision,
            version,
            payload,
            by,
        } => {
            let Some(review) = review else {
                return refused(no_queue());
            };
            save_edit(&review, id, &key, revision, version, payload, by).await
        }
        Effect::Resolve {
            key,
            status,
            by,
            note,
            provider_id,
            seen,
            even_if_found,
        } => {
            let details = ResolveDetails {
                by: Some(by),
                note,
                provider_id,
                seen: Some(seen),
                evidence: None,
                even_if_running: false,
                even_if_found,
            };
            let short = app::short_key(&key);
            match backend.ledger.resolve(&key, status, &details).await {
                Ok(resolved) if resolved.changed => Outcome::Resolved { key, status },
                // Recording sent an attempt someone marked failed, and a run sent it
                // again meanwhile: the provider may now have it twice (S6).
                Ok(resolved)
                    if details
                        .seen
                        .as_ref()
                        .and_then(|s| s.attempts)
                        .is_some_and(|n| n != resolved.entry.attempts()) =>
                {
                    refused(format!(
                        "{short} was sent again meanwhile, as attempt {} at {}: nothing changed, and if attempt {} reached the provider too, it has this send twice.",
                        resolved.entry.attempts(),
                        crate::text::visible_inline(resolved.entry.claimed_at()),
                        details.seen.as_ref().and_then(|s| s.attempts).unwrap_or(0)
                    ))
                }
                Ok(resolved) => refused(format!(
                    "{short} was already {}{}; nothing changed.",
                    resolved.entry.status().as_str(),
                    resolution_by(&resolved.entry)
                )),
                Err(LedgerError::ChangedSinceSeen { now, change, .. }) => {
                    // Marking it sent, on the provider's word, and someone marked it
                    // failed meanwhile: the next run sends it again unless it is
                    // recorded, and no view settles a failed entry (K2).
                    let again = if status == crate::ledger::Status::Sent
                        && now.starts_with("failed")
                    {
                        let quote = |t: &str| {
                            crate::text::visible_inline(&shell_words::quote(t)).into_owned()
                        };
                        let id = details
                            .provider_id
                            .as_deref()
                            .map(|id| format!(" --provider-id {}", quote(id)))
                            .unwrap_or_default();
                        format!(
                            " You were recording it sent: the next run sends it again. Press 3 (it is shown there) and s records it sent, filled in with verify's answer. In a shell: send-once resolve {} {} sent --expect failed{id}",
                            quote(&backend.label),
                            quote(&key)
                        )
                    } else {
                        String::new()
                    };
                    refused(format!(
                        "{short} changed after it was shown: it is now {now}, {change}. Nothing changed.{again}"
                    ))
                }
                Err(LedgerError::AlreadySent(_)) => {
                    let by = match backend.ledger.get(&key).await {
                        Ok(Some(entry)) => resolution_by(&entry),
                        _ => String::new(),
                    };
                    refused(format!(
                        "{short} is already recorded as sent{by}; it cannot be marked failed. Nothing changed."
                    ))
                }
                Err(LedgerError::MayStillRun { attempt, why, .. }) => refused(format!(
                    "{short}: attempt {attempt} is pending and {why}. Marked failed, the next run would send it alongside. Nothing changed: wait for it, or if you know it has stopped, mark it with `send-once resolve ... failed --even-if-running`."
                )),
                Err(LedgerError::FoundByVerify { attempt, found, .. }) => {
                    let why = format!(
                        "{short}: attempt {attempt} is pending, and {}. Marked failed, the next run sends it a second time; nothing changed. The row keeps that answer now: Enter records it sent; if its record is of another message, f asks you to type the evidence to go against it.",
                        found.describe()
                    );
                    match backend.ledger.get(&key).await {
                        Ok(Some(entry)) => Outcome::FoundElsewhere {
                            key,
                            seen: crate::ledger::Seen::entry(&entry),
                            found,
                            why,
                        },
                        _ => refused(why),
                    }
                }
                Err(e) => refused(e.to_string()),
            }
        }
        other => refused(format!("not a decision: {other:?}")),
    }
}

/// Saves an edit as a new revision, if the draft is still as it was when the edit
/// began. An edit refused because the draft moved on (or is gone) is written to a
/// file of its own, named in the reason; any other refusal gives the text back for
/// the next `e`.
async fn save_edit(
    review: &Review,
    id: i64,
    key: &str,
    revision: i64,
    version: i64,
    payload: String,
    by: String,
) -> Outcome {
    use crate::review::{Edit, Edited, ReviewError};
    let edit = Edit {
        id,
        payload: payload.clone(),
        by: Some(by.clone()),
        note: None,
        seen_revision: Some(revision),
        seen_version: Some(version),
    };
    let not_saved = |why: String, kept: Option<String>| Outcome::EditNotSaved {
        id,
        key: key.to_owned(),
        revision,
        version,
        why,
        kept,
    };
    match review.edit(edit).await {
        Ok(Edited::Revised {
            revision,
            state,
            voided,
            ..
        }) => Outcome::Edited {
            id,
            revision,
            by,
            was_approved: state == crate::review::DraftState::Approved,
            voided,
        },
        Ok(Edited::Unchanged { revision, .. }) => Outcome::EditUnchanged { id, revision },
        Err(
            e @ (ReviewError::EditedMeanwhile { .. }
            | ReviewError::Closed { .. }
            | ReviewError::NoDraft(_)),
        ) => {
            let why = with_reason(review, id, e.to_string()).await;
            match keep_file(id, &payload) {
                Ok(path) => not_saved(
                    format!(
                        "{}; your edit is kept in {}",
                        why.trim_end_matches('.'),
                        path.display()
                    ),
                    None,
                ),
                Err(e) => not_saved(
                    format!("{why}; your edit could not be kept in a file ({e})"),
                    Some(payload),
                ),
            }
        }
        Err(e) => not_saved_edit(id, key, revision, version, e.to_string(), &payload),
    }
}

/// `why` an edit of draft `id` was refused, with the reason given when the draft was
/// rejected (or the note when withdrawn) meanwhile: "it was rejected by sam at T" says
/// who, and the person who edited needs the why too. The reason is the rejecter's
/// text: made visible.
async fn with_reason(review: &Review, id: i64, why: String) -> String {
    let Ok(draft) = review.head(id).await else {
        return why;
    };
    let (Some(reason), Some(by), Some(at)) = (
        draft
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty()),
        draft.decided_by.as_deref(),
        draft.decided_at.as_deref(),
    ) else {
        return why;
    };
    let (state, said) = match draft.state {
        crate::review::DraftState::Rejected => ("rejected", "reason"),
        crate::review::DraftState::Withdrawn => ("withdrawn", "note"),
        _ => return why,
    };
    let reason = crate::text::visible_inline(reason);
    // After "it was rejected by sam at T", where the refusal names the decision.
    let named = format!("{state} by {by} at {at}");
    match why.find(&named) {
        Some(at) => {
            let end = at + named.len();
            format!("{}, {said}: \"{reason}\"{}", &why[..end], &why[end..])
        }
        None => format!(
            "{}; {} {state} it, {said}: \"{reason}\"",
            why.trim_end_matches('.'),
            crate::text::visible_inline(by)
        ),
    }
}

/// Every pending entry, oldest claim first. Unlike the audit (which matches the Node
/// CLI), one whose claim time cannot be read is listed too, last: it is still a send
/// whose fate is unknown.
/// The header's counts. The pending rows that cannot be read (each may be an unknown
/// send the Unknown view cannot list, so the header names how many) come with the
/// Unknown view's load, from the same read of the pending rows.
async fn counts(store: &Arc<dyn Store>) -> Result<crate::ledger::Census, String> {
    store.counts().await.map_err(|e| e.to_string())
}

/// The pending entries, oldest claim first, and the pending rows that cannot be read.
async fn unknown_sends(
    store: &Arc<dyn Store>,
) -> Result<(Vec<crate::ledger::Entry>, Vec<crate::ledger::UnreadableRow>), String> {
    let (mut pending, unreadable) = store.pending().await.map_err(|e| e.to_string())?;
    pending.sort_by_cached_key(|e| {
        crate::ledger::time::parse_date(e.claimed_at()).unwrap_or(i64::MAX)
    });
    Ok((pending, unreadable))
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

//! `send-once tui`: the review and reconciliation screen.
//!
//! `App` (state and `update`), `keymap` (one table of keys), `view` (drawing) and
//! `action` (what comes in, what goes out) are pure; this module is the runtime that
//! reads the terminal, runs effects on the ledger off the UI's path, watches the
//! ledger for changes by others (and for its file being deleted or replaced), ends on
//! a signal as on `q`, and feeds everything back as actions.

pub mod action;
pub mod app;
pub mod demo;
pub mod editor;
mod effects;
pub mod forms;
mod kept;
pub mod keymap;
pub mod layout;
pub mod page;
pub mod state;
pub mod terminal;
pub mod theme;
pub mod verify;
pub mod view;
mod watch;
use effects::{LoadSlot, Loads, Runner};
use kept::{KEPT_FILES, KeptFile, keep_file, kept_file_of, name_kept_files};

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crossterm::event::{self, Event};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::ledger::{Clock, Ledger, LedgerLocation, Store, StoreError};
use crate::open::Open;
use crate::review::Review;
use action::{Action, Effect, Outcome};
use app::{App, Options};
use watch::{Current, Opened, Watcher, open_file};

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
    pub verify: crate::config::VerifySetup,
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
    let opened = open_file(&options)?;
    let no_queue = opened.no_queue.clone();
    let current = Current::new(Opened::at(opened, 0));
    let (tx, mut rx) = unbounded_channel::<Action>();
    let asked_to_end = Arc::new(AtomicUsize::new(0));
    let mut signals = watch_signals(&asked_to_end)?;

    let guard =
        terminal::TerminalGuard::enter().map_err(|e| format!("cannot use the terminal: {e}"))?;
    let size = guard.terminal.size().map_err(|e| e.to_string())?;
    let theme = theme::Theme::from_env();
    let app = new_app(&options, no_queue, &current, (size.width, size.height));

    spawn_input(tx.clone());
    Watcher::spawn(current.clone(), Arc::clone(&options), tx.clone());

    let hooks = TestHooks::from_env();
    let started = std::time::Instant::now();
    let (done_tx, mut done_rx) = unbounded_channel::<LoadSlot>();
    let runner = Runner {
        current,
        path: options.file_path(),
        tx: tx.clone(),
        done: done_tx,
        shown: 0,
        clock: Arc::clone(&options.clock),
    };
    let mut screen = Screen {
        guard,
        app,
        theme,
        runner,
        in_flight: Loads::default(),
        asked_to_end,
    };
    screen.start();
    if let Some(hung_up) = screen.draw()? {
        drop(screen);
        return Ok(hung_up);
    }
    hooks.after_first_draw()?;
    let mut ended = Ended::Quit;
    let mut failed = None;
    loop {
        tokio::select! {
            Some(number) = signals.recv() => {
                ended = Ended::Signal(number);
                break;
            }
            Some(slot) = done_rx.recv() => {
                screen.load_done(slot);
                continue;
            }
            action = rx.recv() => {
                let Some(action) = action else { break };
                match screen.take_in(action, &mut rx) {
                    Ok(None) => {}
                    Ok(Some(end)) => {
                        ended = end;
                        break;
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
                if hooks.exit_when_loaded && screen.app.loaded() {
                    drop(screen);
                    eprintln!(
                        "send-once: first full frame after {} ms",
                        started.elapsed().as_millis()
                    );
                    return Ok(Ended::Quit);
                }
            }
        }
    }
    screen.keep_unsaved_edits();
    let Screen { guard, .. } = screen;
    drop(guard);
    name_kept_files();
    match failed {
        Some(e) => Err(e),
        None => Ok(ended),
    }
}

/// The app as the UI starts it, at the terminal's size.
fn new_app(
    options: &UiOptions,
    no_queue: Option<String>,
    current: &Current,
    size: (u16, u16),
) -> App {
    let mut app = App::new(Options {
        ledger_label: options.ledger.to_string(),
        by: options.by.clone(),
        older_than_ms: options.older_than_ms,
        no_queue,
        now: (options.clock)(),
    })
    .with_start(options.start.clone())
    .with_verify(options.verify.clone());
    app.size = size;
    app.writes_refused = current.get().backend.writes_refused.clone();
    app
}

/// What an [`Effect::Edit`] asks for: the payload's text to open in the editor, and
/// the draft's revision and version it was opened at.
struct EditAsked {
    id: i64,
    revision: i64,
    version: i64,
    text: String,
}

/// What the event loop works on: the terminal, the app, and what runs its effects.
struct Screen {
    guard: terminal::TerminalGuard,
    app: App,
    theme: theme::Theme,
    runner: Runner,
    in_flight: Loads,
    /// Set by a signal's handler (see [`watch_signals`]).
    asked_to_end: Arc<AtomicUsize>,
}

impl Screen {
    /// Runs the effects the app asks for as it starts.
    fn start(&mut self) {
        for effect in self.app.start() {
            self.runner.run(effect, 0, &mut self.in_flight);
        }
    }

    /// See [`draw_unless_hung_up`].
    fn draw(&mut self) -> Result<Option<Ended>, String> {
        draw_unless_hung_up(&mut self.guard, &mut self.app, &self.theme)
    }

    fn load_done(&mut self, slot: LoadSlot) {
        self.in_flight.running.remove(&slot);
        // Asked for again while it ran: its answer may predate what was asked
        // about (a change someone made meanwhile), so it runs once more.
        if let Some((effect, shown)) = self.in_flight.again.remove(&slot) {
            self.runner.run(effect, shown, &mut self.in_flight);
        }
    }

    /// Hands `action`, and everything already waiting after it, to the app, runs what
    /// it asks for and draws once. Says how the UI ends if it does.
    fn take_in(
        &mut self,
        action: Action,
        rx: &mut UnboundedReceiver<Action>,
    ) -> Result<Option<Ended>, String> {
        // A terminal that hung up without a SIGHUP reaching us (tmux killed
        // under a parent that ignores it) leaves crossterm's reader spinning
        // on the dead tty (crossterm-rs/crossterm#793): the UI ends as on a
        // SIGHUP instead of living on as an orphan.
        if matches!(action, Action::Tick(_)) && terminal::hung_up() {
            return Ok(Some(Ended::Signal(libc::SIGHUP)));
        }
        let effects = self.update_with_waiting(action, rx);
        if let Some(ended) = self.run_effects(effects) {
            return Ok(Some(ended));
        }
        if self.app.quit {
            return Ok(Some(Ended::Quit));
        }
        self.draw()
    }

    fn update_with_waiting(
        &mut self,
        action: Action,
        rx: &mut UnboundedReceiver<Action>,
    ) -> Vec<(Effect, u64)> {
        let mut resized = matches!(action, Action::Resize(..));
        let mut effects = Vec::new();
        self.runner.update(&mut self.app, action, &mut effects);
        // Take in everything already waiting before drawing once, but not past
        // a resize: what follows it meets the screen drawn at the new size, so
        // no key acts on a form the person cannot see yet.
        while !resized && let Ok(more) = rx.try_recv() {
            resized = matches!(more, Action::Resize(..));
            self.runner.update(&mut self.app, more, &mut effects);
        }
        if let Some(effect) = self.app.history_effect() {
            effects.push((effect, self.runner.shown));
        }
        effects
    }

    /// Runs `effects` in order; says how the UI ends if it was asked to end while the
    /// editor was open.
    fn run_effects(&mut self, effects: Vec<(Effect, u64)>) -> Option<Ended> {
        for (effect, shown) in effects {
            match effect {
                // These use the terminal itself, so they run here, in order.
                Effect::Page { text, .. } => {
                    let result =
                        tokio::task::block_in_place(|| terminal::run_pager(&mut self.guard, &text));
                    self.app.update(Action::Done(Outcome::Paged(result)));
                }
                Effect::Edit {
                    id,
                    revision,
                    version,
                    text,
                } => {
                    let edit = EditAsked {
                        id,
                        revision,
                        version,
                        text,
                    };
                    if let Some(ended) = self.edit(edit, shown) {
                        return Some(ended);
                    }
                }
                Effect::Copy { what, text } => {
                    let outcome = match terminal::copy_to_clipboard(&mut self.guard, &text) {
                        Ok(()) => Outcome::Copied { what },
                        Err(why) => Outcome::Refused {
                            subject: what,
                            why: format!("Could not copy: {why}"),
                        },
                    };
                    self.app.update(Action::Done(outcome));
                }
                effect => self.runner.run(effect, shown, &mut self.in_flight),
            }
        }
        None
    }

    /// Opens the editor on a payload and hands what it closed with to the app; says
    /// how the UI ends if it was asked to end meanwhile.
    fn edit(&mut self, edit: EditAsked, shown: u64) -> Option<Ended> {
        let EditAsked {
            id,
            revision,
            version,
            text,
        } = edit;
        let run = tokio::task::block_in_place(|| editor::run_editor(&mut self.guard, id, &text));
        let asked = self.asked_to_end.load(Ordering::SeqCst);
        if asked != 0 {
            // Asked to end while the editor was open: what was saved
            // is not sent now (nobody is there to see the answer),
            // but kept in a file named at exit. The editor's exit
            // status does not matter: a SIGHUP may have ended it.
            if let Some(saved) = run.changed(&text) {
                let _ = keep_file(id, &String::from_utf8_lossy(saved));
            }
            return Some(Ended::Signal(asked as i32));
        }
        let more = self.app.update(Action::EditorClosed {
            id,
            revision,
            version,
            result: run.result(),
        });
        for effect in more {
            self.runner.run(effect, shown, &mut self.in_flight);
        }
        None
    }

    /// Edits kept only in memory (not JSON, a ledger that could not take them) go to
    /// files before the terminal is given back, and every file an edit is kept in is
    /// named after, where the shell shows it.
    fn keep_unsaved_edits(&self) {
        for (id, kept) in self.app.unsaved_edits() {
            if kept_file_of(id, &kept.text).is_none() {
                let _ = keep_file(id, &kept.text);
            }
        }
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

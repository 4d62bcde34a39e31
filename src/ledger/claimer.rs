//! Who made a claim, and so whether its attempt may still be running.
//!
//! One definition, used by a takeover, by `reset` and `resolve failed`, by `show` and
//! by the screen: an attempt may still be running until its claimer's own limit (its
//! `--timeout`, recorded with the claim) has passed on the store's clock; with no
//! recorded limit (a Node claim, `run` without `--timeout`), while the claiming process
//! is alive on this host. Another host's process cannot be seen, and that is said.
//!
//! The record is a `claimer` object beside the Node fields of the entry; the Node
//! library ignores it, and a Node claim has none.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value};

use super::entry::{Entry, Status};
use super::time;

/// How long past a claimer's limit its attempt is still counted as running: the
/// claimer kills its send at the limit, and the kill, the store's write and two
/// clocks measured against one server each take a moment.
pub const GRACE_MS: i64 = 1_000;

/// The process that made a claim, as the claim records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimer {
    /// Its process id.
    pub pid: u32,
    /// When it started, in clock ticks since boot (`/proc/PID/stat`): a pid reused by
    /// another process after it ended has another start.
    pub start: Option<u64>,
    /// Its host's name.
    pub host: Option<String>,
    /// Its host's boot id: the same name after a reboot, or in another container, is
    /// another set of processes.
    pub boot: Option<String>,
    /// Its send's time limit: past it the claimer has killed the send.
    pub limit_ms: Option<u64>,
    /// Whether it notes the session of each send it starts (`procs::notes`), so that a
    /// note gone missing is a send that cannot be seen, never one that ended.
    pub notes: bool,
}

/// Where an attempt stands, by [`running`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Running {
    /// Not pending, or its claimer recorded how its send ended (an error, an uncertain
    /// answer): the attempt is over, whatever its outcome.
    Ended,
    /// Its claimer's limit has not passed.
    WithinLimit {
        /// When it passes (ms since the epoch, on the store's clock, grace included).
        until_ms: i64,
        /// The claimer's limit.
        limit_ms: u64,
        /// The claiming process, when it is seen to have ended on this host: what it
        /// started elsewhere (an MCP upstream's call, a provider's request) may still
        /// be under way until the limit.
        claimer_gone: Option<u32>,
    },
    /// Its claimer's limit has passed: the send was killed then.
    PastLimit {
        /// When it passed (ms since the epoch, on the store's clock, grace included).
        until_ms: i64,
        /// The claimer's limit.
        limit_ms: u64,
    },
    /// The claiming process is alive on this host, within its limit or not.
    ClaimerAlive {
        /// The claiming process.
        pid: u32,
        /// Its limit, when it recorded one.
        limit_ms: Option<u64>,
    },
    /// The claiming process has ended, but the send it started (its session: a
    /// pipeline, a forked child, a `timeout` wrapper) still runs on this host.
    SendAlive {
        /// The claiming process.
        pid: u32,
        /// The send's session (its command's pid).
        session: u32,
    },
    /// No limit, and the claiming process has ended on this host (a kill -9, a crash).
    ClaimerGone {
        /// The claiming process.
        pid: u32,
    },
    /// No limit, the claiming process has ended on this host, and the note of the send
    /// it started is gone (its directory emptied, or this process's `/tmp` is not the
    /// claimer's): whether that send still runs cannot be seen.
    NoteGone {
        /// The claiming process.
        pid: u32,
    },
    /// Its claimer recorded the attempt unknown at its limit (an MCP proxy's call the
    /// upstream had not answered), and still listens for a late answer, which it
    /// records as sent: its process is alive here, and its `until` has not passed.
    Listening {
        /// The claiming process.
        pid: u32,
        /// Until when it listens (ms since the epoch).
        until_ms: i64,
    },
    /// No limit, and the claimer cannot be seen from here: a Node claim (`host` None),
    /// a claim whose time cannot be read, or another host's process.
    Unseen {
        /// The claimer's host, when it recorded one.
        host: Option<String>,
    },
}

impl Running {
    /// True when the attempt may still be sending.
    pub fn may_still_run(&self) -> bool {
        !matches!(
            self,
            Running::Ended | Running::PastLimit { .. } | Running::ClaimerGone { .. }
        )
    }

    /// True when the attempt is known to be running or within its limit: its
    /// claimer is seen alive here, or its recorded limit has not passed. Neither a
    /// takeover nor a person's "failed" is taken then without the person saying they
    /// know better. An unseen claimer (a Node claim, another host with no limit) is
    /// not known either way: it is said, and the decision is left to who makes it.
    pub fn known_to_run(&self) -> bool {
        matches!(
            self,
            Running::WithinLimit { .. } | Running::ClaimerAlive { .. } | Running::SendAlive { .. }
        )
    }

    /// True when a person's "failed", or a takeover, waits for the person to say they
    /// know better: the attempt is known to run, or it was recorded unknown and a late
    /// answer may still land and be recorded sent (`Listening`). An attempt that
    /// listens is still an unknown send (the agent is told so, and `audit` lists it).
    pub fn holds_off_failed(&self) -> bool {
        self.known_to_run() || matches!(self, Running::Listening { .. })
    }

    /// Why, in a sentence for a person (no terminal escaping needed: the host name is
    /// made visible here).
    pub fn describe(&self) -> String {
        let host = |h: &Option<String>| {
            h.as_deref()
                .map(|h| crate::text::visible_inline(h).into_owned())
                .unwrap_or_default()
        };
        match self {
            Running::Ended => "its claimer recorded how it ended".to_owned(),
            Running::WithinLimit {
                until_ms,
                limit_ms,
                claimer_gone: None,
            } => format!(
                "it may still be running: its claimer's limit of {} ends at {}",
                limit_text(*limit_ms),
                iso(*until_ms)
            ),
            Running::WithinLimit {
                until_ms,
                limit_ms,
                claimer_gone: Some(pid),
            } => format!(
                "it may still be running: its claiming process {pid} has ended on this host, but what it started elsewhere (an upstream's call, a provider's request) may still be under way until its limit of {} ends at {}",
                limit_text(*limit_ms),
                iso(*until_ms)
            ),
            Running::PastLimit { until_ms, limit_ms } => format!(
                "its claimer's limit of {} passed at {}, when its claimer stops the send (if it was still there to)",
                limit_text(*limit_ms),
                iso(*until_ms)
            ),
            Running::ClaimerAlive {
                pid,
                limit_ms: None,
            } => format!(
                "it may still be running: it has no time limit and its claiming process {pid} is alive on this host"
            ),
            Running::ClaimerAlive {
                pid,
                limit_ms: Some(limit),
            } => format!(
                "it may still be running: its claiming process {pid} is alive on this host (its limit is {})",
                limit_text(*limit)
            ),
            Running::SendAlive { pid, session } => format!(
                "it may still be running: its claiming process {pid} has ended, but the send it started (session {session}) is still running on this host"
            ),
            Running::Listening { pid, until_ms } => format!(
                "it may still be made: its claiming process {pid} stopped waiting at its limit, but listens for a late answer until {}, and records one that comes as sent",
                iso(*until_ms)
            ),
            Running::ClaimerGone { pid } => format!(
                "its claiming process {pid} has ended on this host, and the send with it"
            ),
            Running::NoteGone { pid } => format!(
                "it may still be running: it has no time limit, and its claiming process {pid} has ended on this host, but the note of the send it started is gone (/tmp/send-once-groups emptied, or this process's /tmp is not the claimer's, as under systemd PrivateTmp), so whether that send still runs cannot be seen"
            ),
            Running::Unseen { host: None } => {
                "it may still be running: it recorded no claimer or limit (a Node claim, or one from an older send-once), so whether it runs cannot be seen".to_owned()
            }
            Running::Unseen { host: Some(h) } => format!(
                "it may still be running: it has no time limit and its claimer is on host {}, whose processes cannot be seen from here",
                host(&Some(h.clone()))
            ),
        }
    }
}

/// A limit as a person wrote it: `500ms` below a second, else as durations print.
fn limit_text(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else {
        super::duration::format_duration(ms as f64)
    }
}

fn iso(ms: i64) -> String {
    time::iso_from_millis(ms).unwrap_or_else(|| ms.to_string())
}

/// Where the attempt `entry` holds stands at `now_ms` on the store's clock.
pub fn running(entry: &Entry, now_ms: i64) -> Running {
    if entry.status() != Status::Pending {
        return Running::Ended;
    }
    if entry.error().is_some() || entry.uncertain() {
        return listening(entry, now_ms).unwrap_or(Running::Ended);
    }
    let claimer = Claimer::of(entry);
    let seen = claimer.as_ref().and_then(Claimer::seen_here);
    // Seen alive here, it is sending, or about to stop its send at its limit: no clock
    // (a skewed one, a server's measured from afar) outranks the process itself, nor
    // the send it started, which outlives a kill -9 of it in a session of its own.
    match (seen, &claimer) {
        (Some(Seen::Alive), Some(claimer)) => {
            return Running::ClaimerAlive {
                pid: claimer.pid,
                limit_ms: claimer.limit_ms,
            };
        }
        (Some(Seen::SendAlive(session)), Some(claimer)) => {
            return Running::SendAlive {
                pid: claimer.pid,
                session,
            };
        }
        _ => {}
    }
    let alive = seen.map(|seen| seen != Seen::Gone);
    if let Some(limit_ms) = claimer.as_ref().and_then(|c| c.limit_ms) {
        let Some(claimed) = time::parse_date(entry.claimed_at()) else {
            return Running::Unseen { host: None };
        };
        let until_ms = claimed
            .saturating_add(i64::try_from(limit_ms).unwrap_or(i64::MAX))
            .saturating_add(GRACE_MS);
        return if now_ms > until_ms {
            Running::PastLimit { until_ms, limit_ms }
        } else {
            Running::WithinLimit {
                until_ms,
                limit_ms,
                claimer_gone: claimer
                    .as_ref()
                    .filter(|_| alive == Some(false))
                    .map(|c| c.pid),
            }
        };
    }
    match (claimer, alive) {
        (Some(claimer), Some(false)) => Running::ClaimerGone { pid: claimer.pid },
        (Some(claimer), None) if seen.is_none() && claimer.note_gone() => {
            Running::NoteGone { pid: claimer.pid }
        }
        (claimer, _) => Running::Unseen {
            host: claimer.and_then(|c| c.host),
        },
    }
}

/// The entry field in which the process that recorded an attempt unknown says that it
/// listens for a late answer: who it is (as a claimer's record) and `until` when.
const LISTENING: &str = "listening";

/// The record that says this process listens for a late answer to the attempt it
/// recorded unknown, until `until` (an ISO time), for [`LISTENING`].
pub fn listening_record(entry: &mut Entry, until: String) {
    let mut record = Claimer::this_process(None).to_value();
    if let Value::Object(fields) = &mut record {
        fields.insert("until".into(), until.into());
    }
    entry.set(LISTENING, record);
}

/// Whether this very process said in `entry` that it listens for a late answer.
pub fn listened_here(entry: &Entry) -> bool {
    entry
        .get(LISTENING)
        .and_then(Value::as_object)
        .and_then(Claimer::from_record)
        .is_some_and(|listener| listener.is_this_process())
}

/// The longest a claimer listens for a late answer after it recorded its attempt
/// unknown: a record that says longer was not written by one, and is not believed.
pub const LONGEST_LISTEN: Duration = Duration::from_secs(3600);

/// Whether the process that recorded `entry` unknown listens for a late answer at
/// `now_ms`. Seen alive here, it does until it takes its record back, whatever the
/// clocks say (a reader's clock an hour ahead must not end it); seen gone, it does not;
/// out of sight (another host, another pid namespace), it does until its `until`, as a
/// claim out of sight runs until its limit. A record that no claimer would write (no
/// start time to tell a reused pid by, an `until` past the longest listen after the
/// unknown was recorded) is not believed.
fn listening(entry: &Entry, now_ms: i64) -> Option<Running> {
    let record = entry.get(LISTENING)?.as_object()?;
    let until_ms = time::parse_date(record.get("until")?.as_str()?)?;
    record.get("start")?.as_u64()?;
    let recorded = time::parse_date(entry.get("updatedAt")?.as_str()?)?;
    let longest = i64::try_from(LONGEST_LISTEN.as_millis()).unwrap_or(i64::MAX);
    if until_ms > recorded.saturating_add(longest).saturating_add(GRACE_MS) {
        return None;
    }
    let listener = Claimer::from_record(record)?;
    let listens = match listener.alive_here() {
        Some(alive) => alive,
        None => now_ms < until_ms,
    };
    listens.then_some(Running::Listening {
        pid: listener.pid,
        until_ms,
    })
}

impl Claimer {
    /// This process, sending with `limit`.
    pub fn this_process(limit: Option<Duration>) -> Claimer {
        let me = here();
        Claimer {
            pid: std::process::id(),
            start: me.start,
            host: me.host.clone(),
            boot: me.boot.clone(),
            limit_ms: limit.map(|l| u64::try_from(l.as_millis()).unwrap_or(u64::MAX)),
            notes: crate::procs::notes::promised(),
        }
    }

    /// Whether it is this very process (the same pid, started at the same time, on
    /// this boot of this host).
    pub fn is_this_process(&self) -> bool {
        self.pid == std::process::id() && self.alive_here() == Some(true)
    }

    /// Whether it ended on this host and the note of its send cannot say whether that
    /// send still runs: gone after it promised one, or never given its session.
    fn note_gone(&self) -> bool {
        use crate::procs::notes::Noted;
        self.alive_here() == Some(false)
            && match crate::procs::notes::noted_session(self.pid, self.start) {
                Noted::Missing => self.notes,
                Noted::Unknown => true,
                Noted::Running(_) | Noted::Ended => false,
            }
    }

    /// The claimer `entry` records, or None (a Node claim, or an unreadable record).
    pub fn of(entry: &Entry) -> Option<Claimer> {
        Claimer::from_record(entry.get("claimer")?.as_object()?)
    }

    /// The claimer a record (as [`Claimer::to_value`] makes it) names.
    fn from_record(record: &Map<String, Value>) -> Option<Claimer> {
        let text = |name: &str| record.get(name).and_then(Value::as_str).map(str::to_owned);
        Some(Claimer {
            pid: u32::try_from(record.get("pid")?.as_u64()?).ok()?,
            start: record.get("start").and_then(Value::as_u64),
            host: text("host"),
            boot: text("boot"),
            limit_ms: record.get("limitMs").and_then(Value::as_u64),
            notes: record.get("notes") == Some(&Value::Bool(true)),
        })
    }

    /// The record a claim carries.
    pub fn to_value(&self) -> Value {
        let mut record = Map::new();
        record.insert("pid".into(), self.pid.into());
        if let Some(start) = self.start {
            record.insert("start".into(), start.into());
        }
        if let Some(host) = &self.host {
            record.insert("host".into(), host.clone().into());
        }
        if let Some(boot) = &self.boot {
            record.insert("boot".into(), boot.clone().into());
        }
        if let Some(limit) = self.limit_ms {
            record.insert("limitMs".into(), limit.into());
        }
        if self.notes {
            record.insert("notes".into(), true.into());
        }
        Value::Object(record)
    }

    /// Whether the claiming process, or the send it started, is alive, when it ran on
    /// this host (the same boot and pid namespace); None when that cannot be told.
    fn seen_here(&self) -> Option<Seen> {
        let alive = self.alive_here()?;
        if alive {
            return Some(Seen::Alive);
        }
        use crate::procs::notes::Noted;
        match crate::procs::notes::noted_session(self.pid, self.start) {
            Noted::Running(group) => Some(Seen::SendAlive(group)),
            // Its send was being started and never said which session it leads; or
            // the note of a claimer that promised one is gone: cannot be seen.
            Noted::Unknown => None,
            Noted::Missing if self.notes => None,
            Noted::Ended | Noted::Missing => Some(Seen::Gone),
        }
    }

    /// Whether the claiming process is alive, when it ran on this host; None when that
    /// cannot be told. This host is the same boot of the same kernel in the same pid
    /// namespace (`boot` holds both), whatever its name: a host name is changed by
    /// DHCP or `hostnamectl` mid-send, and differs in a UTS namespace, while the
    /// process stays in this process table.
    pub fn alive_here(&self) -> Option<bool> {
        let me = here();
        if self.boot.is_none() || self.boot != me.boot {
            return None;
        }
        Some(match crate::procs::start_time(self.pid) {
            Some(start) => self.start.is_none_or(|recorded| recorded == start),
            None => false,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Alive,
    SendAlive(u32),
    Gone,
}

struct Here {
    start: Option<u64>,
    host: Option<String>,
    boot: Option<String>,
}

fn here() -> &'static Here {
    static HERE: OnceLock<Here> = OnceLock::new();
    HERE.get_or_init(|| {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        };
        Here {
            start: crate::procs::start_time(std::process::id()),
            host: read("/proc/sys/kernel/hostname"),
            // With the pid namespace: two containers on one kernel share a boot id
            // but not their pids.
            boot: read("/proc/sys/kernel/random/boot_id").map(|boot| {
                match std::fs::read_link("/proc/self/ns/pid") {
                    Ok(ns) => format!("{boot} {}", ns.display()),
                    Err(_) => boot,
                }
            }),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(claimer: Option<Claimer>) -> Entry {
        let mut entry = Entry::claim("k", "2026-12-06T00:00:00.000Z", None);
        if let Some(claimer) = claimer {
            entry.set("claimer", claimer.to_value());
        }
        entry
    }

    const CLAIMED: i64 = 1_796_515_200_000;

    /// An entry recorded unknown at CLAIMED + 1 s, with `listener`'s listening record
    /// saying `until`.
    fn listened(listener: &Claimer, until_ms: i64) -> Entry {
        let mut entry = pending(None);
        entry.set("error", "Delivery is unknown: past the limit");
        entry.set("uncertain", true);
        entry.set("updatedAt", time::iso_from_millis(CLAIMED + 1_000).unwrap());
        let mut record = listener.to_value();
        record["until"] = time::iso_from_millis(until_ms).unwrap().into();
        entry.set(LISTENING, record);
        entry
    }

    /// A listener is believed by what can be seen of it: alive here, it listens
    /// whatever the clocks say; out of sight (another host, another pid namespace),
    /// until its `until`, as a claim out of sight runs until its limit (hostile round,
    /// session 42: AH1, AH5); a record no claimer would write is not believed (AH6).
    #[test]
    fn a_listener_is_believed_by_what_can_be_seen_of_it() {
        let hour = i64::try_from(LONGEST_LISTEN.as_millis()).unwrap();
        let until = CLAIMED + 1_000 + hour;
        let listens =
            |entry: &Entry, now: i64| matches!(running(entry, now), Running::Listening { .. });
        let me = Claimer::this_process(None);
        assert!(listens(&listened(&me, until), CLAIMED + 2_000));
        assert!(
            listens(&listened(&me, until), until + 3 * hour),
            "a clock ahead"
        );
        let elsewhere = Claimer {
            boot: Some("another boot".into()),
            ..me.clone()
        };
        assert!(listens(&listened(&elsewhere, until), CLAIMED + 2_000));
        assert!(!listens(&listened(&elsewhere, until), until + 1));
        let gone = Claimer {
            start: me.start.map(|start| start + 1),
            ..me.clone()
        };
        assert!(!listens(&listened(&gone, until), CLAIMED + 2_000));
        // Not what a claimer writes: no start time, or longer than it may listen.
        let no_start = Claimer {
            start: None,
            ..me.clone()
        };
        assert!(!listens(&listened(&no_start, until), CLAIMED + 2_000));
        assert!(!listens(
            &listened(&me, until + GRACE_MS + 1),
            CLAIMED + 2_000
        ));
    }

    #[test]
    fn a_limit_decides_on_the_store_clock_and_a_taker_cannot_shorten_it() {
        // On another host (another boot): only the clock can tell.
        let elsewhere = Claimer {
            host: Some("other-host".into()),
            boot: Some("another boot".into()),
            ..Claimer::this_process(Some(Duration::from_secs(60)))
        };
        let entry = pending(Some(elsewhere));
        assert_eq!(time::parse_date(entry.claimed_at()), Some(CLAIMED));
        assert!(running(&entry, CLAIMED + 60_000).may_still_run());
        assert!(running(&entry, CLAIMED + 60_000 + GRACE_MS).may_still_run());
        assert!(!running(&entry, CLAIMED + 60_000 + GRACE_MS + 1).may_still_run());
        // Here, a claimer seen alive outranks any clock; one seen gone leaves the
        // limit to rule, as orphans of its send may live until then.
        let me = Claimer::this_process(Some(Duration::from_secs(60)));
        assert!(running(&pending(Some(me.clone())), CLAIMED + 86_400_000).may_still_run());
        let gone = Claimer {
            pid: u32::MAX,
            notes: false,
            ..me
        };
        let within = running(&pending(Some(gone.clone())), CLAIMED + 1);
        assert!(within.may_still_run());
        // Said so: the claimer is gone, what it started may not be.
        assert!(
            matches!(
                within,
                Running::WithinLimit {
                    claimer_gone: Some(u32::MAX),
                    ..
                }
            ),
            "{within:?}"
        );
        assert!(within.describe().contains("has ended on this host"));
        assert!(!running(&pending(Some(gone)), CLAIMED + 62_000).may_still_run());
    }

    #[test]
    fn without_a_limit_the_claimer_must_be_seen_gone() {
        let me = Claimer::this_process(None);
        assert_eq!(
            running(&pending(Some(me.clone())), CLAIMED + 86_400_000),
            Running::ClaimerAlive {
                pid: std::process::id(),
                limit_ms: None,
            }
        );
        let reused = Claimer {
            start: me.start.map(|s| s + 1),
            ..me.clone()
        };
        assert_eq!(
            running(&pending(Some(reused)), CLAIMED),
            Running::ClaimerGone {
                pid: std::process::id()
            },
            "a pid now used by another process"
        );
        let elsewhere = Claimer {
            host: Some("other-host".into()),
            boot: Some("another boot".into()),
            ..me
        };
        assert!(running(&pending(Some(elsewhere)), CLAIMED).may_still_run());
        assert_eq!(
            running(&pending(None), CLAIMED),
            Running::Unseen { host: None }
        );
        let round_trip = Claimer::of(&pending(Some(Claimer::this_process(Some(
            Duration::from_millis(1500),
        )))))
        .unwrap();
        assert_eq!(round_trip.limit_ms, Some(1500));
    }
}

//! What flows through the UI: `Action`s come in (keys, data loaded, results of work
//! done), `Effect`s go out (work for the runtime: loads, decisions). `App::update` turns
//! the one into the other and does no IO itself. The runtime reports what came of a
//! decision as an `Outcome` (a typed result); the app words it.

use crossterm::event::{KeyEvent, MouseEvent};

use crate::ledger::decision::Decision;
use crate::ledger::{Census, Entry, PageQuery, Seen, Status, UnreadableRow};
use crate::provider::{CheckAnswer, Limit};
use crate::review::Draft;

#[derive(Clone, Debug)]
pub enum Action {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// Time passes: ages move, and the runtime looks for changes by others.
    Tick(i64),
    /// Someone (this UI, another reviewer, a sender, the CLI) changed the ledger.
    Changed,
    ApprovalsLoaded(Result<Vec<Draft>, String>),
    UnknownLoaded(Result<Vec<Entry>, String>),
    /// The Unknown view's entries with the pending rows that could not be read, from
    /// one read of the pending rows (the header names the unreadable ones).
    PendingLoaded {
        entries: Result<Vec<Entry>, String>,
        unreadable: Vec<UnreadableRow>,
    },
    LedgerLoaded {
        query: PageQuery,
        result: Result<Vec<Entry>, String>,
    },
    CountsLoaded(Result<Census, String>),
    DecisionsLoaded(Result<Vec<Decision>, String>),
    /// The whole decision log's hash chain, verified.
    ChainChecked(Result<crate::ledger::chain::Report, String>),
    /// A draft with every revision (the queue holds only the current, previous and
    /// approved ones), asked for by `[` reaching past them.
    DraftLoaded {
        id: i64,
        result: Result<Box<Draft>, String>,
    },
    /// The decisions about one item (a key, or `draft:ID`), oldest first.
    HistoryLoaded {
        subject: String,
        result: Result<Vec<Decision>, String>,
    },
    /// The verify command answered about `key`, asked about the entry as it was then
    /// (`seen`).
    Verified {
        key: String,
        seen: Seen,
        answer: CheckAnswer,
    },
    /// Verify's answer about `key` could not be kept in the decision log: `why`.
    VerifyNotKept {
        key: String,
        why: String,
    },
    /// The editor `e` opened on draft `id`'s payload exited: what it saved, or why
    /// nothing was. The edit began from `revision` at `version`.
    EditorClosed {
        id: i64,
        revision: i64,
        version: i64,
        result: Result<Vec<u8>, String>,
    },
    /// An effect finished: what came of it.
    Done(Outcome),
    /// The ledger's path no longer holds the file that was opened: decisions are off
    /// until a ledger is back there.
    LedgerGone(Gone),
    /// A ledger is at the path again: the file opened (moved back), or another one,
    /// now opened in its place (`reopened`).
    LedgerBack {
        reopened: bool,
    },
}

/// What became of the ledger's file while the UI ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gone {
    /// Nothing is at the path: deleted, or moved away.
    Deleted,
    /// Another file is at the path, not yet opened.
    Replaced,
    /// Another file is at the path and it cannot be opened as a ledger, or the path
    /// cannot be looked at: why.
    Unusable(String),
}

/// Work for the runtime. Decisions carry everything they need, so a confirmed
/// decision is exactly what was shown.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    LoadApprovals,
    LoadUnknown,
    LoadLedger(PageQuery),
    LoadCounts,
    LoadDecisions,
    /// Verifies the decision log's hash chain (the whole log, not only the page shown).
    CheckChain,
    /// The decisions about the selected item, for its history.
    LoadHistory(String),
    /// A draft with every revision.
    LoadDraft(i64),
    Approve {
        id: i64,
        revision: i64,
        /// The draft's version when it was shown: any change since (a decision by
        /// someone else, a new revision) refuses this one.
        version: i64,
        ttl: String,
        by: String,
        note: Option<String>,
    },
    Reject {
        id: i64,
        version: i64,
        reason: String,
        by: String,
    },
    Recheck {
        id: i64,
    },
    Resolve {
        key: String,
        status: Status,
        by: String,
        note: Option<String>,
        provider_id: Option<String>,
        /// The entry as the person saw it when they decided.
        seen: Seen,
        /// The person confirmed it, shown that its attempt may still be running.
        even_if_running: bool,
        /// The person typed that they go against a verify that found it.
        even_if_found: bool,
    },
    /// Decisions confirmed together (a bulk settle or reject): each is still its own
    /// compare-and-set, run one after another, reported as one outcome and followed
    /// by one reload.
    Batch(Vec<Effect>),
    /// Ask the verify command about one entry, as it is shown. Its answer is kept in
    /// the decision log (it changes no entry) and comes back as `Action::Verified`,
    /// for the person to act on.
    Verify {
        key: String,
        entry: Box<Entry>,
        argv: Vec<String>,
        timeout: Limit,
        /// Who asked, and the command as configured: the answer is kept in the
        /// decision log under both.
        by: String,
        command: String,
    },
    /// Show this text in `$PAGER`, the UI suspended meanwhile.
    Page {
        title: String,
        text: String,
    },
    /// Open `text` (draft `id`'s payload, or an edit kept from before) in the editor,
    /// the UI suspended meanwhile; the edit began from `revision` at `version`.
    Edit {
        id: i64,
        revision: i64,
        version: i64,
        text: String,
    },
    /// Save an edited payload as a new revision by `by`, only if the draft is still at
    /// `version` (as it was when the edit began).
    SaveEdit {
        id: i64,
        /// The draft's send key when the edit began: a kept edit opens again only on
        /// the draft with this key.
        key: String,
        revision: i64,
        version: i64,
        payload: String,
        by: String,
    },
    /// Put this text on the clipboard (OSC 52).
    Copy {
        what: String,
        text: String,
    },
    Quit,
}

/// What came of one decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Approved {
        id: i64,
        revision: i64,
        expires_at: String,
        /// For a draft that needed several approvers, everyone the approval counts
        /// ("dana, sam") and how many that is.
        approvers: Option<(String, usize)>,
    },
    /// An approval toward a draft that needs several, short of the number: recorded,
    /// with no approval made yet ("approved 1 of 2", and how many more).
    Voted {
        id: i64,
        revision: i64,
        so_far: String,
        missing: i64,
    },
    Rejected {
        id: i64,
    },
    Rechecked {
        id: i64,
        summary: String,
    },
    Resolved {
        key: String,
        status: Status,
    },
    /// Nothing was written, and why (someone decided first, it changed since it was
    /// shown, the ledger could not be written).
    Refused {
        subject: String,
        why: String,
    },
    /// Marking `key` failed was refused: a verify someone asked (`by`, at `at`) found
    /// the attempt shown (`seen`) at the provider. The screen keeps that answer as its
    /// own, so Enter records it sent and `f` asks for the evidence typed.
    FoundElsewhere {
        key: String,
        seen: Seen,
        found: crate::ledger::Found,
        why: String,
    },
    /// An edit became revision `revision` of draft `id`, by `by`; `was_approved`
    /// when the draft's approval was for an earlier revision.
    Edited {
        id: i64,
        revision: i64,
        by: String,
        was_approved: bool,
        /// Who had approved the revision it replaced toward an approval not yet made:
        /// those votes no longer count.
        voided: Vec<String>,
    },
    /// The edited payload is the current one: nothing was written.
    EditUnchanged {
        id: i64,
        revision: i64,
    },
    /// The edit was not saved, and why. `kept` is the text to open again on the next
    /// `e` (a payload that is not JSON, a ledger that could not be written); when the
    /// draft moved on it is in a file the reason names instead, and `kept` is None.
    EditNotSaved {
        id: i64,
        key: String,
        revision: i64,
        version: i64,
        why: String,
        kept: Option<String>,
    },
    /// Decisions confirmed together, each with what came of it, in order.
    Batch(Vec<Outcome>),
    /// A pager ran and returned, or could not start.
    Paged(Result<(), String>),
    /// Copied to the clipboard.
    Copied {
        what: String,
    },
}

impl Outcome {
    pub fn ok(&self) -> bool {
        match self {
            Outcome::Refused { .. }
            | Outcome::FoundElsewhere { .. }
            | Outcome::EditNotSaved { .. } => false,
            Outcome::Batch(items) => items.iter().all(Outcome::ok),
            Outcome::Paged(result) => result.is_ok(),
            _ => true,
        }
    }
}

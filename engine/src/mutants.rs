//! Deliberate bugs the test suite must catch (TigerBeetle-style: a
//! simulator is only trusted once it has been seen to fail).
//!
//! Each [`Mutant`] is one small change at a place where a real bug would
//! be. With the `mutants` cargo feature, `select` switches one on for the
//! whole process and [`on`] reports it at that place; without the feature
//! [`on`] is a constant `false` and every mutation compiles away, so default
//! builds carry none of them. `tdx-sim mutants` runs the Supervisor model
//! checks and a simulation sweep against each one and fails if any survives.
//!
//! The selection is process-global on purpose: it is test instrumentation,
//! set once before a run, read at the mutation sites (the Supervisor stays
//! a pure function of its inputs for any fixed selection).

/// A deliberate bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mutant {
    /// A cancelled request's slot is released for reuse instead of retired:
    /// its late reply can answer the next request on that connection.
    CancelReleasesSlot = 1,
    /// A frame from an older generation of its slot is handled as if it
    /// came from the current one.
    GenerationCheckSkipped,
    /// A reply completes its request twice.
    ReplyCompletedTwice,
    /// A read that fails keeps its raw-budget reservation forever.
    RawBudgetLeakOnError,
    /// A reply that fails to parse keeps its decoded-budget reservation.
    DecodedBudgetLeakOnBadReply,
    /// Dropped pushes are never reported (`PushBatch::overflow_total` stays `None`).
    PushOverflowUnreported,
    /// A request's deadline timer fires one millisecond late.
    DeadlineOneTickLate,
    /// Close reports `Closed` while connections are still retiring.
    ClosedWhileRetiring,
    /// A reply is matched to the exchange in flight without checking its msg_id.
    StaleFrameAccepted,
    /// A retry-safe request whose reply was bad is sent again on the same
    /// connection instead of after the generation retired.
    RetryOnSameConnection,
    /// Admission lets one request past `pool_size + max_pending_requests`.
    AdmissionPastCapacity,
    /// A caller whose exchange on a lent connection fails closes the
    /// connection but does not report the failure (its slot task, seeing
    /// the line closed, reports nothing either).
    BorrowerFailureUnreported,
    /// A caller's thread that borrowed a connection keeps it when done
    /// instead of giving it back to its slot task.
    ThreadLoanNotGivenBack,
    /// A connection that thread loans left off its reactor is never put
    /// back once they pause: its pushes and its server's close wake nobody.
    OffReactorNeverReattached,
    /// A MAC request that timed out leaves its connection in use instead of
    /// retiring it: its late reply (msg_id 0, like every MAC reply) answers
    /// the next MAC request on that connection.
    MacTimeoutKeepsConnection,
    /// A MAC reply is matched by the engine's msg_id instead of the one its
    /// codec says the reply carries (0): no MAC reply is ever taken.
    MacReplyMatchedByEngineId,
    /// The data canary accepts a server whose probe query answered with no data.
    DataCanaryAcceptsEmpty,
    /// A second opinion that found data returns the first server's empty
    /// answer to the caller instead.
    SecondOpinionReturnsFirst,
    /// A server contradicted by a second opinion is not demoted.
    ContradictedNotDemoted,
    /// The rate cap is one token for the whole pool instead of one per server.
    RateCapPoolWide,
    /// A move retires its busy mover at once and forgets the request in flight.
    MoveDropsRequest,
    /// A move retires its busy mover at once: the request in flight is sent again.
    MoveResendsRequest,
    /// Capital changes (0x000f) stop at the prefix of codes a server
    /// answered instead of asking again for the rest.
    CapitalChangesPrefixLost,
    /// `tdx sync` writes its manifest before the files it lists.
    SyncManifestBeforeFiles,
    /// The store writes a file in place instead of to a temporary then renamed.
    StoreRenameSkipped,
    /// The 7727 pool's data canary asks nothing (its probe is empty), so a
    /// host that answers the login and then goes silent is accepted.
    ExSilentServerAccepted,
    /// Bar pages keep the bar they overlap on twice (the joined series
    /// repeats one bar per page).
    BarPagesJoinKeepsOverlap,
}

impl Mutant {
    /// Every mutant, in declaration order.
    pub const ALL: [Mutant; 27] = [
        Mutant::CancelReleasesSlot,
        Mutant::GenerationCheckSkipped,
        Mutant::ReplyCompletedTwice,
        Mutant::RawBudgetLeakOnError,
        Mutant::DecodedBudgetLeakOnBadReply,
        Mutant::PushOverflowUnreported,
        Mutant::DeadlineOneTickLate,
        Mutant::ClosedWhileRetiring,
        Mutant::StaleFrameAccepted,
        Mutant::RetryOnSameConnection,
        Mutant::AdmissionPastCapacity,
        Mutant::BorrowerFailureUnreported,
        Mutant::ThreadLoanNotGivenBack,
        Mutant::OffReactorNeverReattached,
        Mutant::MacTimeoutKeepsConnection,
        Mutant::MacReplyMatchedByEngineId,
        Mutant::DataCanaryAcceptsEmpty,
        Mutant::SecondOpinionReturnsFirst,
        Mutant::ContradictedNotDemoted,
        Mutant::RateCapPoolWide,
        Mutant::MoveDropsRequest,
        Mutant::MoveResendsRequest,
        Mutant::CapitalChangesPrefixLost,
        Mutant::SyncManifestBeforeFiles,
        Mutant::StoreRenameSkipped,
        Mutant::ExSilentServerAccepted,
        Mutant::BarPagesJoinKeepsOverlap,
    ];

    /// Its name on the command line (snake case).
    pub fn name(self) -> &'static str {
        match self {
            Mutant::CancelReleasesSlot => "cancel_releases_slot",
            Mutant::GenerationCheckSkipped => "generation_check_skipped",
            Mutant::ReplyCompletedTwice => "reply_completed_twice",
            Mutant::RawBudgetLeakOnError => "raw_budget_leak_on_error",
            Mutant::DecodedBudgetLeakOnBadReply => "decoded_budget_leak_on_bad_reply",
            Mutant::PushOverflowUnreported => "push_overflow_unreported",
            Mutant::DeadlineOneTickLate => "deadline_one_tick_late",
            Mutant::ClosedWhileRetiring => "closed_while_retiring",
            Mutant::StaleFrameAccepted => "stale_frame_accepted",
            Mutant::RetryOnSameConnection => "retry_on_same_connection",
            Mutant::AdmissionPastCapacity => "admission_past_capacity",
            Mutant::BorrowerFailureUnreported => "borrower_failure_unreported",
            Mutant::ThreadLoanNotGivenBack => "thread_loan_not_given_back",
            Mutant::OffReactorNeverReattached => "off_reactor_never_reattached",
            Mutant::MacTimeoutKeepsConnection => "mac_timeout_keeps_connection",
            Mutant::MacReplyMatchedByEngineId => "mac_reply_matched_by_engine_id",
            Mutant::DataCanaryAcceptsEmpty => "data_canary_accepts_empty",
            Mutant::SecondOpinionReturnsFirst => "second_opinion_returns_first",
            Mutant::ContradictedNotDemoted => "contradicted_not_demoted",
            Mutant::RateCapPoolWide => "rate_cap_pool_wide",
            Mutant::MoveDropsRequest => "move_drops_request",
            Mutant::MoveResendsRequest => "move_resends_request",
            Mutant::CapitalChangesPrefixLost => "capital_changes_prefix_lost",
            Mutant::SyncManifestBeforeFiles => "sync_manifest_before_files",
            Mutant::StoreRenameSkipped => "store_rename_skipped",
            Mutant::ExSilentServerAccepted => "ex_silent_server_accepted",
            Mutant::BarPagesJoinKeepsOverlap => "bar_pages_join_keeps_overlap",
        }
    }

    /// The mutant called `name`.
    pub fn from_name(name: &str) -> Option<Mutant> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

#[cfg(feature = "mutants")]
static ACTIVE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Switches `mutant` on for the whole process (`None`: all off).
#[cfg(feature = "mutants")]
pub fn select(mutant: Option<Mutant>) {
    ACTIVE.store(mutant.map_or(0, |m| m as u8), std::sync::atomic::Ordering::SeqCst);
}

/// Whether `mutant` is switched on.
#[cfg(feature = "mutants")]
#[inline]
pub fn on(mutant: Mutant) -> bool {
    ACTIVE.load(std::sync::atomic::Ordering::Relaxed) == mutant as u8
}

/// Whether `mutant` is switched on: never, without the `mutants` feature.
#[cfg(not(feature = "mutants"))]
#[inline(always)]
pub const fn on(_mutant: Mutant) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let names: std::collections::BTreeSet<_> = Mutant::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), Mutant::ALL.len());
        for m in Mutant::ALL {
            assert_eq!(Mutant::from_name(m.name()), Some(m));
        }
        assert_eq!(Mutant::from_name("no_such_bug"), None);
    }

    // That a default build carries none is shown by the binary, not by
    // `on` (a constant `false` there): `tests/cli.rs`,
    // `an_ordinary_build_carries_no_mutant`.
}

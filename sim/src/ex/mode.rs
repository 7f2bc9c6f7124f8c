//! What a 7727 server answers: the free servers of 2026 leave commands
//! unanswered (eltdx 3.3.0 `docs/EXTENDED_MARKET.md`). Its own file, so the
//! 7709 reference server can serve as a 7727 one without importing the
//! listener.

use tdx_engine::proto::ex::{ExPortRequest, ExRequest};

/// Which commands a 7727 server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ExMode {
    /// Every EX and MAC-EX command.
    #[default]
    Normal,
    /// eltdx's `MAC_EX_HOSTS` in 2026: the login, the instrument count and
    /// pages and every MAC-EX command, with 0x2562 answering no records;
    /// the other EX commands (markets, quotes, bars, minutes, ticks) go
    /// unanswered.
    MacOnly,
    /// eltdx's `KNOWN_EX_HOSTS` in 2026: the login, the instrument count
    /// and pages; nothing else is answered.
    CountsOnly,
    /// The login is answered, then nothing (a server that accepts and
    /// goes silent).
    SilentAfterLogin,
}

impl ExMode {
    /// Whether `self` answers `request` at all.
    pub fn answers(self, request: &ExPortRequest) -> bool {
        let listing = matches!(
            request,
            ExPortRequest::Ex(ExRequest::Login(_) | ExRequest::InstrumentCount(_) | ExRequest::Instruments(_))
        );
        match (self, request) {
            (Self::Normal, _) => true,
            (Self::SilentAfterLogin, r) => matches!(r, ExPortRequest::Ex(ExRequest::Login(_))),
            (Self::CountsOnly, _) => listing,
            (Self::MacOnly, ExPortRequest::MacEx(_)) => true,
            (Self::MacOnly, _) => listing,
        }
    }
}

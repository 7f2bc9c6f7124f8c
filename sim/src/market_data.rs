//! What a reference server serves: the seeded [`Market`] and the tables
//! built from the whole of it (the board files and their MAC boards, the
//! special-limit table, the unusual-move feeds, the extended market).
//! Each is built once, on first use, and shared by every server and
//! question after that; the market itself knows nothing of them.

use std::sync::{Arc, OnceLock};

use tdx_engine::proto::commands::{MacUnusualMove, SpecialLimit};
use tdx_engine::proto::Market as Exchange;

use crate::boards::BoardFiles;
use crate::ex::ExWorld;
use crate::limits::special_limits;
use crate::mac::boards::MacBoards;
use crate::mac::unusual::unusual_feed;
use crate::market::Market;

/// A market and the data derived from it.
#[derive(Debug)]
pub struct MarketData {
    market: Market,
    /// The board files (about 1 MB).
    boards: OnceLock<BoardFiles>,
    /// The 0x0452 table.
    special_limits: OnceLock<Vec<SpecialLimit>>,
    /// The boards as MAC lists them.
    mac_boards: OnceLock<MacBoards>,
    /// Each exchange's unusual-move feed (0x1237), in wire-id order.
    unusual: [OnceLock<Vec<MacUnusualMove>>; 3],
    /// The extended market (7727) of the same seed and day.
    ex: OnceLock<Arc<ExWorld>>,
}

impl MarketData {
    /// The data of `market`; nothing derived is built yet.
    pub fn new(market: Market) -> Self {
        Self {
            market,
            boards: OnceLock::new(),
            special_limits: OnceLock::new(),
            mac_boards: OnceLock::new(),
            unusual: Default::default(),
            ex: OnceLock::new(),
        }
    }

    /// The market itself.
    pub fn market(&self) -> &Market {
        &self.market
    }

    /// The boards and the files publishing them (built once, then shared).
    pub fn boards(&self) -> &BoardFiles {
        self.boards.get_or_init(|| BoardFiles::build(&self.market))
    }

    /// The boards with their MAC codes (built once, then shared).
    pub fn mac_boards(&self) -> &MacBoards {
        self.mac_boards.get_or_init(|| MacBoards::build(&self.market, self.boards()))
    }

    /// The unusual-move feed of `exchange` (built once, then shared).
    pub fn unusual(&self, exchange: Exchange) -> &[MacUnusualMove] {
        self.unusual[usize::from(exchange.id())].get_or_init(|| unusual_feed(&self.market, exchange))
    }

    /// The extended market of the market's seed and today, as `tdx-sim
    /// serve --ex-port` and `truth ex-*` build it (built once, then shared).
    pub fn ex_world(&self) -> &Arc<ExWorld> {
        self.ex.get_or_init(|| Arc::new(ExWorld::new(self.market.seed(), self.market.today())))
    }

    /// The special-security limit table (built once, then shared).
    pub fn special_limits(&self) -> &[SpecialLimit] {
        self.special_limits.get_or_init(|| special_limits(&self.market))
    }
}

impl From<Market> for MarketData {
    fn from(market: Market) -> Self {
        Self::new(market)
    }
}

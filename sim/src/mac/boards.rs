//! The boards as MAC lists them: the board files' boards (industries,
//! concepts, styles, index boards) with six-digit codes of their own on
//! Shanghai, their members as codes, and their values computed from the
//! members' day, so 0x1231, 0x122C and 0x1218 agree with the board files
//! 0x02c5/0x06b9 (and 0x1215/0x1217) publish.
//!
//! Codes: industry `i` is 881001 + i, concept 880501 + i, style 880301 +
//! i, index board 880201 + i (file order). A board's value is an equally
//! weighted index of its members: 1000 at the previous close, 1000 times
//! the members' mean close over previous close now; its rise speed is that
//! change in percent; its leading stock the member with the largest change
//! (the lowest code among equals).

use std::collections::HashMap;

use tdx_engine::proto::blockfile::BoardKind;
use tdx_engine::proto::commands::mac_board_kind;
use tdx_engine::proto::{Category, Market as Exchange, SecurityCode};

use crate::boards::BoardFiles;
use crate::limits::limit_prices;
use crate::market::{Listing, Market};

/// Value of a board at its previous close.
pub const BOARD_BASE: f64 = 1000.0;

/// One board.
#[derive(Debug, Clone)]
pub struct MacBoard {
    /// Its kind.
    pub kind: BoardKind,
    /// Its code, on Shanghai.
    pub code: SecurityCode,
    /// Its name, as the board file spells it.
    pub name: String,
    /// Its members, in the file's order.
    pub members: Vec<SecurityCode>,
}

impl MacBoard {
    /// The 0x122C id of the board (880686 is 20686).
    pub fn id(&self) -> u32 {
        self.code.code().parse::<u32>().expect("six digits") - 880_000 + 20_000
    }
}

/// Every board, in [`BoardKind::ALL`] then file order.
#[derive(Debug, Clone)]
pub struct MacBoards {
    /// The boards.
    pub boards: Vec<MacBoard>,
}

fn first_code(kind: BoardKind) -> u32 {
    match kind {
        BoardKind::Industry => 881_001,
        BoardKind::Concept => 880_501,
        BoardKind::Style => 880_301,
        BoardKind::Index => 880_201,
    }
}

/// The 0x1231 kind of a board kind (index boards are "other"): the
/// exchange's own table, kept apart from the engine's `mac_kind_of`.
pub fn mac_kind(kind: BoardKind) -> u16 {
    match kind {
        BoardKind::Industry => mac_board_kind::INDUSTRY,
        BoardKind::Concept => mac_board_kind::CONCEPT,
        BoardKind::Style => mac_board_kind::STYLE,
        BoardKind::Index => mac_board_kind::OTHER,
    }
}

impl MacBoards {
    /// The boards of `files`, their members resolved among `market`'s A
    /// shares (the files hold six digits; A-share digits are unique across
    /// the exchanges).
    pub fn build(market: &Market, files: &BoardFiles) -> Self {
        let a_shares: HashMap<String, SecurityCode> = Exchange::ALL
            .into_iter()
            .flat_map(|e| market.listings(e))
            .filter(|l| l.category == Category::AShare)
            .map(|l| (l.code.code().to_owned(), l.code))
            .collect();
        let mut boards = Vec::new();
        for kind in BoardKind::ALL {
            for (i, board) in files.of(kind).iter().enumerate() {
                let digits = format!("{}", first_code(kind) + i as u32);
                let code =
                    SecurityCode::new(Exchange::Sh, digits.as_bytes().try_into().expect("six digits")).expect("digits");
                let members = board.codes.iter().filter_map(|c| a_shares.get(c).copied()).collect();
                boards.push(MacBoard { kind, code, name: board.name.clone(), members });
            }
        }
        Self { boards }
    }

    /// The board with `code`.
    pub fn by_code(&self, code: SecurityCode) -> Option<&MacBoard> {
        self.boards.iter().find(|b| b.code == code)
    }

    /// The board with 0x122C id `id`.
    pub fn by_id(&self, id: u32) -> Option<&MacBoard> {
        self.boards.iter().find(|b| b.id() == id)
    }

    /// The boards of 0x1231 kind `kind` (255: all).
    pub fn of_kind(&self, kind: u16) -> impl Iterator<Item = &MacBoard> {
        self.boards.iter().filter(move |b| kind == mac_board_kind::ALL || mac_kind(b.kind) == kind)
    }

    /// The boards `code` belongs to.
    pub fn of_stock(&self, code: SecurityCode) -> impl Iterator<Item = &MacBoard> {
        self.boards.iter().filter(move |b| b.members.contains(&code))
    }
}

/// A board's day, from its members.
#[derive(Debug, Clone, Copy)]
pub struct BoardValue<'a> {
    /// Its value now.
    pub price: f64,
    /// Its value at the previous close ([`BOARD_BASE`]).
    pub pre_close: f64,
    /// Its change, percent.
    pub change_pct: f64,
    /// The member with the largest change.
    pub leader: Option<&'a Listing>,
    /// Members at their limit-up price.
    pub limit_up: u32,
    /// Members at their limit-down price.
    pub limit_down: u32,
    /// Members up on the day.
    pub up: u32,
    /// Members down on the day.
    pub down: u32,
}

/// A listing's change today as a fraction of its previous close.
pub fn change(market: &Market, l: &Listing) -> f64 {
    let (day, previous_close) = market.today_day(l);
    day.close as f64 / previous_close.max(1) as f64 - 1.0
}

/// The value of `board` today.
pub fn board_value<'a>(market: &'a Market, board: &MacBoard) -> BoardValue<'a> {
    let members: Vec<&Listing> = board.members.iter().filter_map(|c| market.listing(*c)).collect();
    let changes: Vec<f64> = members.iter().map(|l| change(market, l)).collect();
    let mean = if changes.is_empty() { 0.0 } else { changes.iter().sum::<f64>() / changes.len() as f64 };
    let leader = members
        .iter()
        .zip(&changes)
        .fold(None::<(&Listing, f64)>, |best, (l, &c)| match best {
            Some((b, bc)) if bc > c || (bc == c && b.code < l.code) => Some((b, bc)),
            _ => Some((l, c)),
        })
        .map(|(l, _)| l);
    let mut value = BoardValue {
        price: BOARD_BASE * (1.0 + mean),
        pre_close: BOARD_BASE,
        change_pct: mean * 100.0,
        leader,
        limit_up: 0,
        limit_down: 0,
        up: 0,
        down: 0,
    };
    for (l, c) in members.iter().zip(&changes) {
        let (day, _) = market.today_day(l);
        if let Some((up, down)) = limit_prices(market, l) {
            value.limit_up += u32::from(day.close >= up);
            value.limit_down += u32::from(day.close <= down);
        }
        value.up += u32::from(*c > 0.0);
        value.down += u32::from(*c < 0.0);
    }
    value
}

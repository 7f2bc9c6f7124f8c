//! The reply parsers of today's minute line, ticks, call auction, minute aux, sparkline and refresh: `reply_parsers`' check
//! ([`tdx_fuzz::check_reply`]) with the command code mapped into the family
//! ([`tdx_fuzz::Family::msg_type`]), so every execution lands in one of them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_fuzz::{check_reply, Family, ReplyCase};

fuzz_target!(|data: &[u8]| {
    let case = ReplyCase::read(data);
    check_reply(Family::Intraday.msg_type(case.msg_type), &case.body, &case.payload);
});

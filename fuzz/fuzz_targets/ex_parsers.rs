//! The 7727 request and reply parsers, EX and MAC-EX: `reply_parsers`'
//! layout with the command code mapped into the EX and MAC-EX commands
//! ([`tdx_fuzz::ex_msg_type`]), checked by [`tdx_fuzz::check_ex_reply`].
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_fuzz::{check_ex_reply, ex_msg_type, ReplyCase};

fuzz_target!(|data: &[u8]| {
    let case = ReplyCase::read(data);
    check_ex_reply(ex_msg_type(case.msg_type), &case.body, &case.payload);
});

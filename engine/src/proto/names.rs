//! The names the protocol's values go by in text: each type parses its own
//! names (`FromStr`) and prints its one canonical spelling (`Display`), so
//! the command line, the Python binding and the reference exchange's truth
//! all read and write the same words. A name none of them knows is a
//! [`ParseNameError`] that lists the accepted ones.

/// A name the type it was meant for does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {input:?}: use {accepted}")]
pub struct ParseNameError {
    what: &'static str,
    input: String,
    accepted: &'static str,
}

impl ParseNameError {
    /// `input` is no `what`; `accepted` lists what is.
    pub(crate) fn new(what: &'static str, input: &str, accepted: &'static str) -> Self {
        Self { what, input: input.to_owned(), accepted }
    }

    /// The text that did not parse.
    pub fn input(&self) -> &str {
        &self.input
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::{Debug, Display};
    use std::str::FromStr;

    use crate::proto::blockfile::BoardKind;
    use crate::proto::commands::{category_sort, Adjust, AuxKind, Period, QuoteCategory, TradeSide};
    use crate::proto::{Date, Market, SecurityCode, TradeDate};

    /// Every value prints a name that parses back to it, and that name is
    /// among the accepted ones a bad name's error lists.
    fn round_trips<T>(values: &[T], bad: &str)
    where
        T: FromStr + Display + Debug + PartialEq,
        T::Err: Display,
    {
        let accepted = bad.parse::<T>().expect_err("the bad name is refused").to_string();
        assert!(accepted.starts_with("unknown ") && accepted.contains(&format!("{bad:?}")), "{accepted}");
        for value in values {
            let name = value.to_string();
            assert_eq!(name.parse::<T>().ok().as_ref(), Some(value), "{name}");
            assert!(accepted.contains(&name), "{name} is missing from {accepted:?}");
        }
    }

    #[test]
    fn named_values_round_trip() {
        round_trips(&Market::ALL, "hk");
        round_trips(&Period::NAMED, "fortnight");
        round_trips(
            &[Adjust::None, Adjust::Forward, Adjust::Backward, Adjust::FixedForward, Adjust::FixedBackward],
            "xfq",
        );
        round_trips(
            &[
                TradeSide::Buy,
                TradeSide::Sell,
                TradeSide::Neutral,
                TradeSide::AfterHours,
                TradeSide::Auction,
                TradeSide::Unknown,
            ],
            "sideways",
        );
        round_trips(&QuoteCategory::ALL, "nope");
        round_trips(&BoardKind::ALL, "nope");
        round_trips(&[AuxKind::BUY_SELL_STRENGTH, AuxKind::VOLUME_COMPARISON], "sideways");
    }

    #[test]
    fn canonical_spellings() {
        let names = |values: &[&dyn Display]| values.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(names(&[&Market::Sz, &Market::Sh, &Market::Bj]), ["sz", "sh", "bj"]);
        let periods: Vec<String> = Period::NAMED.iter().map(ToString::to_string).collect();
        assert_eq!(periods, ["day", "week", "month", "quarter", "year", "1m", "5m", "15m", "30m", "60m"]);
        assert_eq!(names(&[&Period::Minutes(10), &Period::Days(2), &Period::Seconds(5)]), ["10m", "2d", "5s"]);
        assert_eq!(
            names(&[&Adjust::None, &Adjust::Forward, &Adjust::Backward, &Adjust::FixedForward, &Adjust::FixedBackward]),
            ["none", "qfq", "hfq", "fixed_qfq", "fixed_hfq"]
        );
        assert_eq!(TradeSide::AfterHours.to_string(), "after-hours");
        assert_eq!(QuoteCategory::AShare.to_string(), "a_share");
        assert_eq!(BoardKind::Concept.to_string(), "concept");
        assert_eq!(names(&[&AuxKind::BUY_SELL_STRENGTH, &AuxKind(7)]), ["buy_sell_strength", "7"]);
    }

    #[test]
    fn other_accepted_spellings() {
        assert_eq!("SH".parse(), Ok(Market::Sh));
        assert_eq!("2".parse(), Ok(Market::Bj));
        // `Nm` for N of the named minutes is the same bars by another wire code.
        assert_eq!(Period::Minutes(5).to_string().parse(), Ok(Period::Min5));
        assert_eq!("1d".parse(), Ok(Period::Days(1)));
        for (name, adjust) in [
            ("forward", Adjust::Forward),
            ("backward", Adjust::Backward),
            ("fixed_forward", Adjust::FixedForward),
            ("fixed_backward", Adjust::FixedBackward),
        ] {
            assert_eq!(name.parse(), Ok(adjust), "{name}");
        }
        assert_eq!("沪深A股".parse(), Ok(QuoteCategory::AShare));
        assert_eq!("15".parse(), Ok(QuoteCategory::Bj));
        assert_eq!("strength".parse(), Ok(AuxKind::BUY_SELL_STRENGTH));
        assert_eq!("volumes".parse(), Ok(AuxKind::VOLUME_COMPARISON));
        assert_eq!("11".parse(), Ok(AuxKind::VOLUME_COMPARISON));
        assert_eq!(category_sort::parse("涨幅"), Ok(category_sort::CHANGE_PCT));
        assert_eq!(category_sort::parse("0x0a"), Ok(category_sort::AMOUNT));
        let code: SecurityCode = "sz000001".parse().unwrap();
        for spelling in ["SZ000001", "000001.SZ", "000001.sz"] {
            assert_eq!(spelling.parse(), Ok(code), "{spelling}");
        }
        assert_eq!(code.to_string().parse(), Ok(code));
        for bad in ["000001", "sz00001", "000001.hk", ".sz", "000001."] {
            assert!(bad.parse::<SecurityCode>().is_err(), "{bad}");
        }
        let day = Date::new(2026, 3, 6).unwrap();
        for spelling in ["20260306", "2026-03-06"] {
            assert_eq!(spelling.parse(), Ok(day), "{spelling}");
            assert_eq!(spelling.parse(), Ok(TradeDate::new(day)), "{spelling}");
        }
        assert_eq!(day.to_string().parse(), Ok(day));
        for bad in ["2026036", "2026-13-01", "20260230", "+20260306", "2026-0306", "yesterday"] {
            assert!(bad.parse::<Date>().is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_name_the_accepted_values() {
        let message = |e: &dyn Display| e.to_string();
        assert_eq!(message(&"hk".parse::<Market>().unwrap_err()), "unknown market \"hk\": use sz, sh or bj");
        assert!(message(&"7x".parse::<Period>().unwrap_err()).contains("day, week, month"));
        assert!(message(&category_sort::parse("height").unwrap_err()).contains("code, price, amount, change"));
        assert!(message(&"x".parse::<AuxKind>().unwrap_err()).contains("0..=255"));
        assert!(message(&"000001.hk".parse::<SecurityCode>().unwrap_err()).contains("000001.SZ"));
    }
}

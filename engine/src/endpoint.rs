//! Parsing `HOST:PORT` into an [`Endpoint`], once for every caller (the
//! builder, the saved ranking, the bundled list, the connector and the CLI).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::supervisor::Endpoint;

/// Why a string is not `HOST:PORT`; the message names the string and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not HOST:PORT: {problem}")]
pub struct EndpointError {
    /// The text given.
    pub input: String,
    /// What is wrong with it.
    pub problem: EndpointProblem,
}

/// What is wrong with an endpoint string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointProblem {
    /// Nothing after the last `:`, or no `:` at all.
    NoPort,
    /// The port is not a number from 1 to 65535.
    BadPort,
    /// Nothing before the `:`.
    NoHost,
    /// An IPv6 address must be written in brackets: `[::1]:7709`.
    UnbracketedIpv6,
    /// A `[` without its `]`, or brackets around something that is not an IPv6 address.
    BadBrackets,
    /// The host contains whitespace.
    Whitespace,
    /// Digits and dots that are no IPv4 address (`300.1.1.1`); no host
    /// name's last label is all digits.
    BadIpv4,
}

impl fmt::Display for EndpointProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoPort => "no port",
            Self::BadPort => "bad port: not a number from 1 to 65535",
            Self::NoHost => "no host before the port",
            Self::UnbracketedIpv6 => "an IPv6 address needs brackets, as in [::1]:7709",
            Self::BadBrackets => "brackets must enclose an IPv6 address, as in [::1]:7709",
            Self::Whitespace => "the host contains whitespace",
            Self::BadIpv4 => "not an IPv4 address (each of four numbers from 0 to 255)",
        })
    }
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    /// `HOST:PORT`, where HOST is a name, an IPv4 address or a bracketed
    /// IPv6 address (`[::1]:7709`). Surrounding whitespace is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem| EndpointError { input: s.to_owned(), problem };
        let text = s.trim();
        let (host, port) = text.rsplit_once(':').ok_or(bad(EndpointProblem::NoPort))?;
        if port.is_empty() {
            return Err(bad(EndpointProblem::NoPort));
        }
        // Port 0 is no server's: a connect to it fails on every system.
        let port: u16 = port.parse().ok().filter(|p| *p != 0).ok_or(bad(EndpointProblem::BadPort))?;
        let host = if let Some(inner) = host.strip_prefix('[') {
            let inner = inner.strip_suffix(']').ok_or(bad(EndpointProblem::BadBrackets))?;
            if inner.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad(EndpointProblem::BadBrackets));
            }
            inner
        } else if host.contains(':') {
            return Err(bad(EndpointProblem::UnbracketedIpv6));
        } else if host.contains(']') {
            return Err(bad(EndpointProblem::BadBrackets));
        } else {
            host
        };
        if host.is_empty() {
            return Err(bad(EndpointProblem::NoHost));
        }
        if host.chars().any(char::is_whitespace) {
            return Err(bad(EndpointProblem::Whitespace));
        }
        let last_label = host.trim_end_matches('.').rsplit('.').next().unwrap_or_default();
        if !last_label.is_empty()
            && last_label.bytes().all(|b| b.is_ascii_digit())
            && host.parse::<std::net::Ipv4Addr>().is_err()
            && host.parse::<std::net::Ipv6Addr>().is_err()
        {
            return Err(bad(EndpointProblem::BadIpv4));
        }
        Ok(Endpoint::new(host, port))
    }
}

impl Endpoint {
    /// The host as an IP address, if it is one (names are not resolved).
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.trim_start_matches('[').trim_end_matches(']').parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(s: &str) -> EndpointProblem {
        s.parse::<Endpoint>().unwrap_err().problem
    }

    #[test]
    fn parses_names_ipv4_and_bracketed_ipv6() {
        assert_eq!("127.0.0.1:7709".parse(), Ok(Endpoint::new("127.0.0.1", 7709)));
        assert_eq!(" server0:7709 ".parse(), Ok(Endpoint::new("server0", 7709)));
        let v6: Endpoint = "[::1]:7709".parse().unwrap();
        assert_eq!(v6, Endpoint::new("::1", 7709));
        assert_eq!(v6.ip(), Some(IpAddr::from(std::net::Ipv6Addr::LOCALHOST)));
        assert_eq!(Endpoint::new("server0", 1).ip(), None);
    }

    #[test]
    fn display_round_trips() {
        for s in ["127.0.0.1:7709", "[::1]:7709", "[fe80::1]:80", "sim:7710"] {
            assert_eq!(s.parse::<Endpoint>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn bad_input_names_the_problem() {
        assert_eq!(problem("nohost"), EndpointProblem::NoPort);
        assert_eq!(problem("host:"), EndpointProblem::NoPort);
        assert_eq!(problem(":7709"), EndpointProblem::NoHost);
        assert_eq!(problem("300.1.1.1:7709"), EndpointProblem::BadIpv4);
        assert_eq!(problem("1.2.3:7709"), EndpointProblem::BadIpv4);
        assert!("tdx1.example.com:7709".parse::<Endpoint>().is_ok());
        assert!("[::ffff:127.0.0.1]:7709".parse::<Endpoint>().is_ok());
        assert_eq!(problem("h:port"), EndpointProblem::BadPort);
        assert_eq!(problem("h:70000"), EndpointProblem::BadPort);
        assert_eq!(problem("::1:7709"), EndpointProblem::UnbracketedIpv6);
        assert_eq!(problem("[::1:7709"), EndpointProblem::BadBrackets);
        assert_eq!(problem("[host]:7709"), EndpointProblem::BadBrackets);
        assert_eq!(problem("a b:7709"), EndpointProblem::Whitespace);
        let e = "h:port".parse::<Endpoint>().unwrap_err().to_string();
        assert!(e.contains("\"h:port\"") && e.contains("port"), "{e}");
    }
}

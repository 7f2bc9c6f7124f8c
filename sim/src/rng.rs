//! SplitMix64: the synthetic market's only source of chance. Every value is
//! a pure function of the market seed and what it describes (a code, a day),
//! so the same seed always gives the same bytes, on any machine. The
//! generator is the engine's ([`tdx_engine::rng::Rng`]), one for both.

pub use tdx_engine::rng::Rng;

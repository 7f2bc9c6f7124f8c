//! CI only: no code; its dependency list is the point (see Cargo.toml).
#![no_std]

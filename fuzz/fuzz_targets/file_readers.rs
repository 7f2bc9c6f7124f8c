//! The TDX client's own files (`tdx_engine::files`): the first byte picks
//! the reader and the layout, the rest is the file.
//! Invariants: no panic; what a reader returns, its writer writes and the
//! reader reads back the same (daily, `.5` and gbbq files byte for byte).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::files::blocks::{read_blk, read_custom_blocks_cfg, write_blk, write_custom_blocks_cfg};
use tdx_engine::files::day::{read_daily, read_ex_daily, write_daily, write_ex_daily};
use tdx_engine::files::finance::{read_finance, write_finance_dat};
use tdx_engine::files::gbbq::{read_gbbq, write_gbbq, GBBQ_RECORD_BYTES};
use tdx_engine::files::industry::{read_industry, write_industry};
use tdx_engine::files::minute::{read_minutes, write_minutes, MinuteForm};
use tdx_engine::files::{FileLayout, VolumeUnit};
use tdx_engine::proto::PriceScale;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else { return };
    let scale = if pick & 0x10 != 0 { PriceScale::THOUSANDTHS } else { PriceScale::HUNDREDTHS };
    let layout = FileLayout {
        price: scale,
        daily_volume: if pick & 0x20 != 0 { VolumeUnit::Lots } else { VolumeUnit::Shares },
        index: pick & 0x40 != 0,
    };
    match pick % 8 {
        0 => {
            if let Ok(records) = read_daily(file, layout) {
                assert_eq!(write_daily(&records, layout).as_deref(), Ok(file));
            }
        }
        1 => {
            if let Ok(records) = read_minutes(file, MinuteForm::Hundredths) {
                assert_eq!(write_minutes(&records, MinuteForm::Hundredths).as_deref(), Ok(file));
            }
        }
        2 => {
            let form = MinuteForm::Float(scale);
            if let Ok(records) = read_minutes(file, form) {
                // Floats round to the tick on reading; what the writer takes reads back the same.
                if let Ok(again) = write_minutes(&records, form) {
                    assert_eq!(read_minutes(&again, form), Ok(records));
                }
            }
        }
        3 => {
            if let Ok(records) = read_gbbq(file) {
                if file.is_empty() {
                    // An empty file is a file with no records; the writer writes its count.
                    assert!(records.is_empty());
                } else {
                    let whole = 4 + records.len() * GBBQ_RECORD_BYTES;
                    assert_eq!(write_gbbq(&records).as_deref(), Ok(&file[..whole]));
                }
            }
        }
        4 => {
            if let Ok(f) = read_finance(file) {
                if let Ok(dat) = write_finance_dat(&f) {
                    let back = read_finance(&dat).expect("a written file reads");
                    assert_eq!(back.header, f.header);
                    let bits = |x: &tdx_engine::files::finance::FinanceFile| -> Vec<Vec<u32>> {
                        x.records.iter().map(|r| r.fields.iter().map(|v| v.to_bits()).collect()).collect()
                    };
                    assert_eq!(bits(&back), bits(&f));
                }
            }
        }
        5 => {
            if let Ok(rows) = read_industry(file) {
                if let Ok(again) = write_industry(&rows) {
                    assert_eq!(read_industry(&again), Ok(rows));
                }
            }
        }
        6 => {
            if let Ok(codes) = read_blk(file) {
                assert_eq!(read_blk(&write_blk(&codes)), Ok(codes));
            }
            if let Ok(entries) = read_custom_blocks_cfg(file) {
                if let Ok(again) = write_custom_blocks_cfg(&entries) {
                    assert_eq!(read_custom_blocks_cfg(&again), Ok(entries));
                }
            }
        }
        _ => {
            if let Ok(records) = read_ex_daily(file) {
                assert_eq!(write_ex_daily(&records), file);
            }
        }
    }
});

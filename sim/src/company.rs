//! Company information (F10 公司信息) served through 0x02cf/0x02d0: per
//! stock one GBK file of sections, written from what the market already
//! knows about it (name, industry board, concept boards, finance record,
//! capital changes), so the text agrees with the other commands.

use std::fmt::Write as _;

use encoding_rs::GBK;
use tdx_engine::proto::blockfile::BoardKind;
use tdx_engine::proto::commands::CompanySection;
use tdx_engine::proto::Category;

use crate::market::Listing;
use crate::market_data::MarketData;

/// One stock's company-info file and its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanyFile {
    /// The file name the directory names (`600000.txt`).
    pub filename: String,
    /// The whole file, GBK.
    pub bytes: Vec<u8>,
    /// The directory: each section's name, offset and length in `bytes`.
    pub sections: Vec<CompanySection>,
}

impl CompanyFile {
    /// The text of `section`, as 0x02d0 serves it (clipped to the file).
    pub fn slice(&self, start: u32, length: u32) -> &[u8] {
        let start = (start as usize).min(self.bytes.len());
        let end = start.saturating_add(length as usize).min(self.bytes.len());
        &self.bytes[start..end]
    }
}

/// The company file of `l`; stocks only (funds and indexes have none).
pub fn company_file(data: &MarketData, l: &Listing) -> Option<CompanyFile> {
    if l.category != Category::AShare {
        return None;
    }
    let digits = l.code.code();
    let (market, boards) = (data.market(), data.boards());
    let in_boards = |kind: BoardKind| -> Vec<&str> {
        boards.of(kind).iter().filter(|b| b.codes.iter().any(|c| c == digits)).map(|b| b.name.as_str()).collect()
    };
    let industry = in_boards(BoardKind::Industry).first().copied().unwrap_or("综合");
    let concepts = in_boards(BoardKind::Concept);
    let finance = market.finance(l);
    let changes = market.capital_changes(l);
    let dividends = changes.iter().filter(|c| c.category == 1).count();
    let (today, _) = market.today_day(l);

    let mut sections: Vec<(&str, String)> = Vec::new();
    let mut text = String::new();
    let _ = write!(
        text,
        "{}（{}）是一家{}行业的上市公司，于{}上市，注册于第{}号省份。\r\n公司主营{}相关业务，坚持稳健经营。\r\n",
        l.name, l.code, industry, finance.ipo_date_raw, finance.province, industry
    );
    sections.push(("公司概况", text));
    let mut text = String::new();
    let _ = write!(text, "所属行业：{industry}\r\n");
    if concepts.is_empty() {
        text.push_str("所属概念：无\r\n");
    } else {
        let _ = write!(text, "所属概念：{}\r\n", concepts.join("、"));
    }
    sections.push(("题材要点", text));
    let mut text = String::new();
    let _ = write!(
        text,
        "流通股本：{:.0}万股\r\n最新收盘：{:.2}元\r\n最新成交：{}手\r\n",
        finance.float_shares,
        today.close as f64 / 1000.0,
        today.lots
    );
    sections.push(("股本结构", text));
    let mut text = String::new();
    let _ = write!(text, "历年股本变迁{}次，其中分红送配{}次。\r\n", changes.len(), dividends);
    for c in changes.iter().rev().take(5) {
        let _ = write!(text, "{}  类别{}\r\n", c.date_raw, c.category);
    }
    sections.push(("分红融资", text));
    sections
        .push(("经营分析", format!("{}近年经营平稳，主营业务收入保持增长，{}行业景气度良好。\r\n", l.name, industry)));

    let filename = format!("{digits}.txt");
    let mut bytes = Vec::new();
    let mut directory = Vec::with_capacity(sections.len());
    for (name, text) in sections {
        let (encoded, _, unmappable) = GBK.encode(&text);
        debug_assert!(!unmappable, "company text is GBK");
        let start = bytes.len() as u32;
        bytes.extend_from_slice(&encoded);
        directory.push(CompanySection {
            name: name.to_owned(),
            filename: filename.clone(),
            start,
            length: encoded.len() as u32,
        });
    }
    Some(CompanyFile { filename, bytes, sections: directory })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::Market;

    #[test]
    fn sections_tile_the_file_and_decode() {
        let data = MarketData::new(Market::new(7));
        let market = data.market();
        let l = market.listing("sz000001".parse().unwrap()).unwrap();
        let file = company_file(&data, l).unwrap();
        let mut at = 0;
        for s in &file.sections {
            assert_eq!(s.start, at);
            at += s.length;
            let (text, _, bad) = GBK.decode(file.slice(s.start, s.length));
            assert!(!bad && !text.is_empty(), "{}", s.name);
        }
        assert_eq!(at as usize, file.bytes.len());
        assert_eq!(company_file(&data, l), Some(file), "deterministic");
        assert!(company_file(&data, market.listing("sh000001".parse().unwrap()).unwrap()).is_none());
    }
}

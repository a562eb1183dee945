//! The paths `commands/` names for the sizing report and figures: the text is
//! `mbx_app::present`'s.

pub use mbx_app::present::num;
pub use mbx_app::present::sizing::{paper_comparison, size_report};

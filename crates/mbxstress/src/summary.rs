//! The path `commands/` names for seconds as measured: the text is `mbx_app::present`'s.

pub(crate) use mbx_app::present::fmt_secs;

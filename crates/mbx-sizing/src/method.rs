//! The sizing methods we implement, and how each is named in output.

use serde::{Serialize, Serializer};

/// A published sizing method. Every figure in a report is attributed to one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// Microsoft's Exchange 2013 Server Role Requirements Calculator.
    #[default]
    Exchange2013,
    /// The Exchange 2016 calculator (same IOPS and memory inputs as 2013, new megacycles).
    Exchange2016,
    /// The Exchange 2019 calculator (inputs of 2016; different RAM and core ceilings).
    Exchange2019,
    /// The Exchange 2010 figures of VMware's Exchange design and sizing guide, as the Tintri paper
    /// used them for CPU and memory.
    Exchange2010Vmware,
    /// Exchange Server Subscription Edition: the 2019 calculator's figures under their own name.
    /// Exchange SE is Exchange 2019 CU15 under a new licence (Microsoft upgrades 2019 CU14/CU15
    /// in place to SE) and Microsoft publishes no separate SE sizing, so it is an alias of 2019.
    ExchangeSe,
}

impl Method {
    /// All methods, in the order `--help` lists them.
    pub const ALL: [Method; 5] = [
        Method::Exchange2013,
        Method::Exchange2016,
        Method::Exchange2019,
        Method::ExchangeSe,
        Method::Exchange2010Vmware,
    ];

    /// The CLI / input-file name (`--method exchange2013`).
    pub fn cli_name(self) -> &'static str {
        match self {
            Method::Exchange2013 => "exchange2013",
            Method::Exchange2016 => "exchange2016",
            Method::Exchange2019 => "exchange2019",
            Method::Exchange2010Vmware => "exchange2010-vmware",
            Method::ExchangeSe => "exchange-se",
        }
    }

    /// The identifier written to JSON (`method` in the result contract).
    pub fn id(self) -> &'static str {
        match self {
            Method::Exchange2013 => "exchange2013-calculator",
            Method::Exchange2016 => "exchange2016-calculator",
            Method::Exchange2019 => "exchange2019-calculator",
            Method::Exchange2010Vmware => "exchange2010-vmware-guide",
            Method::ExchangeSe => "exchange-se-calculator",
        }
    }

    /// A short human label, printed beside each figure.
    pub fn label(self) -> &'static str {
        match self {
            Method::Exchange2013 => "Exchange 2013 calculator",
            Method::Exchange2016 => "Exchange 2016 calculator",
            Method::Exchange2019 => "Exchange 2019 calculator",
            Method::Exchange2010Vmware => "Exchange 2010 / VMware guide",
            Method::ExchangeSe => "Exchange SE (2019 calculator)",
        }
    }

    /// Parses a CLI name; accepts the JSON id too so a report's `method` can be fed back.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .find(|m| m.cli_name() == name || m.id() == name)
    }

    /// The method whose figures this one uses: Exchange SE uses 2019's; others themselves.
    pub fn figures(self) -> Method {
        match self {
            Method::ExchangeSe => Method::Exchange2019,
            m => m,
        }
    }

    /// True for the calculator family (2013, 2016, 2019, SE).
    pub fn is_calculator(self) -> bool {
        !matches!(self, Method::Exchange2010Vmware)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.cli_name())
    }
}

impl Serialize for Method {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.cli_name()), Some(m));
            assert_eq!(Method::parse(m.id()), Some(m));
        }
        assert_eq!(Method::parse("exchange2007"), None);
        assert_eq!(Method::parse("exchange-se"), Some(Method::ExchangeSe));
        assert_eq!(Method::ExchangeSe.figures(), Method::Exchange2019);
        assert!(Method::ExchangeSe.is_calculator());
    }
}

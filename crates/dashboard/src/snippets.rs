//! The agents' set-up snippets (`docs/agents.md`): the MetaTrader 5 and 4
//! expert advisors' inputs, the Python bridge's command and the simulated
//! terminal's, filled with this gateway's address as the browser reaches it
//! and the terminal key (when it is being shown) or a placeholder.

use actix_web::HttpRequest;

/// Where agents reach this gateway, as the owner's browser sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentAddress {
    /// `https://host[:port]` (or `http://`).
    pub base: String,
    /// `wss://host[:port]/agent/v1` (or `ws://`).
    pub websocket: String,
    /// `https://host[:port]/agent/v1/poll` (or `http://`).
    pub poll: String,
}

impl AgentAddress {
    /// From the request's scheme and host (`https` when `secure`).
    pub(crate) fn of(req: &HttpRequest, secure: bool) -> Self {
        let host = req.connection_info().host().to_owned();
        Self::new(&host, secure)
    }

    pub(crate) fn new(host: &str, secure: bool) -> Self {
        let (http, ws) = if secure { ("https", "wss") } else { ("http", "ws") };
        Self {
            base: format!("{http}://{host}"),
            websocket: format!("{ws}://{host}/agent/v1"),
            poll: format!("{http}://{host}/agent/v1/poll"),
        }
    }
}

/// Placeholder for a key that is not shown.
pub(crate) const KEY_PLACEHOLDER: &str = "<TERMINAL_KEY>";

/// One snippet: id (for the copy button), title, what to do, the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snippet {
    pub id: &'static str,
    pub title: &'static str,
    pub intro: &'static str,
    pub text: String,
}

/// The snippets for `key` (or [`KEY_PLACEHOLDER`]) at `address`.
pub(crate) fn all(address: &AgentAddress, key: Option<&str>) -> Vec<Snippet> {
    let key = key.unwrap_or(KEY_PLACEHOLDER);
    vec![
        Snippet {
            id: "snippet-mt5",
            title: "MetaTrader 5 expert advisor",
            intro: "Allow WebRequest for the gateway's address (Tools → Options → Expert Advisors), \
                    attach TradetermAgent to a chart and set these inputs:",
            text: format!(
                "Allow WebRequest for listed URL: {base}\n\
                 inp_GatewayUrl   = {ws}\n\
                 inp_TerminalKey  = {key}\n\
                 inp_AllowTrading = false   (true, and the Algo Trading button on, only if it may trade)\n\
                 inp_Transport    = WebSocket (HTTP long-poll if a proxy blocks WebSocket)",
                base = address.base,
                ws = address.websocket,
            ),
        },
        Snippet {
            id: "snippet-mt4",
            title: "MetaTrader 4 expert advisor",
            intro: "Allow WebRequest for the gateway's address, attach TradetermAgent to a chart and set \
                    these inputs (MT4 always uses the HTTP long-poll binding):",
            text: format!(
                "Allow WebRequest for listed URL: {base}\n\
                 inp_GatewayUrl   = {poll}\n\
                 inp_TerminalKey  = {key}\n\
                 inp_AllowTrading = false   (true, Allow live trading and AutoTrading on, only if it may trade)",
                base = address.base,
                poll = address.poll,
            ),
        },
        Snippet {
            id: "snippet-python",
            title: "Python bridge (MetaTrader 5)",
            intro: "On the terminal's Windows machine, with the bridge installed from agents/python \
                    (the key goes in the environment, not on the command line):",
            text: format!(
                "py -m pip install \"C:\\src\\tradeterm\\agents\\python[mt5]\"\n\
                 $env:TRADETERM_TERMINAL_KEY = \"{key}\"\n\
                 tradeterm-agent --gateway {ws} --symbols EURUSD,GBPUSD",
                ws = address.websocket,
            ),
        },
        Snippet {
            id: "snippet-sim",
            title: "Simulated terminal (no MetaTrader needed)",
            intro: "To try the gateway without a terminal, run the simulator that ships with tradeterm:",
            text: format!(
                "export TRADETERM_TERMINAL_KEY='{key}'\n\
                 tradeterm-sim --gateway {ws}",
                ws = address.websocket,
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_name_this_gateway_and_the_key() {
        let address = AgentAddress::new("gw.example:8081", true);
        assert_eq!(address.websocket, "wss://gw.example:8081/agent/v1");
        assert_eq!(address.poll, "https://gw.example:8081/agent/v1/poll");
        let shown = all(&address, Some("tt_term_abc"));
        assert_eq!(shown.len(), 4);
        for s in &shown {
            assert!(s.text.contains("tt_term_abc"), "{}", s.title);
            assert!(s.text.contains("gw.example:8081"), "{}", s.title);
        }
        assert!(
            shown[1]
                .text
                .contains("inp_GatewayUrl   = https://gw.example:8081/agent/v1/poll")
        );
        let hidden = all(&AgentAddress::new("127.0.0.1:8081", false), None);
        assert!(hidden.iter().all(|s| s.text.contains(KEY_PLACEHOLDER)));
        assert!(hidden[0].text.contains("ws://127.0.0.1:8081/agent/v1"));
    }
}

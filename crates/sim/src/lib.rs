//! # tradeterm-sim
//!
//! A simulated MetaTrader-style terminal and broker that connects to the
//! tradeterm gateway exactly as a real terminal-side agent does (agent
//! protocol v1 over WebSocket), so that the whole service can be run, demoed
//! and tested without MetaTrader.
//!
//! - [`Simulator`]: a cloneable handle to one account at a simulated broker
//!   and its market (five symbols; EURUSD and US500 replayed from real bars
//!   embedded in the binary, the others from a seeded model). Every protocol
//!   [`Command`](tradeterm_protocol::Command) is answered by
//!   [`Simulator::execute`].
//! - [`Clock`]: where "now" comes from; [`ManualClock`] lets tests replay a
//!   week of market in milliseconds.
//! - [`spawn_agent`]: the agent (handshake, concurrent requests,
//!   heartbeats, events, reconnection with backoff), over WebSocket or the
//!   HTTP long-poll binding ([`Transport`], chosen by the URL's scheme).
//! - [`swarm`]: many light agents in one process (real protocol, fixed
//!   answers, no market), the load generator and the key provisioning of the
//!   capacity benchmark (`cargo xtask bench scale`).
//!
//! **Key design decision:** prices are a pure function of (seed, symbol,
//! time). Ticks exist on a fixed grid of time slots and are *processed* in
//! time order whenever the simulator catches up with its clock, so the same
//! seed and the same clock steps give byte-identical ticks and deal history,
//! however often the clock was read in between.
//!
//! **Architecture invariant:** depends on `tradeterm-protocol` (the wire
//! types) and `tradeterm-core` (its trade maths), never on the gateway, the
//! store or an adapter. Nothing is read from disk at run time: market data is
//! compiled in (the one exception is the optional CA file of a `wss://`
//! connection, [`AgentSettings::ca_file`]).

mod agent;
mod book;
mod broker;
mod calendar;
mod clock;
mod exec;
mod feed;
mod market;
mod poll;
mod rng;
pub mod swarm;
mod symbols;
pub mod tls;

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tradeterm_core::time::{DAY_MS, UnixMs};
use tradeterm_core::{AccountInfo, Deal, PendingOrder, Position, Tick, TradeMode};
use tradeterm_protocol::agent::{
    AccountIdentity, AgentInfo, Command, CommandResult, ErrorBody, Event, Hello, HistoryOrder, PROTOCOL_VERSION,
    Permissions, Platform, TerminalIdentity,
};

pub use agent::{AgentHandle, AgentSettings, spawn_agent};
pub use clock::{Clock, ManualClock, SystemClock};
pub use poll::Transport;

use broker::{AccountSetup, Broker, SimEvent};
use market::Market;

/// Name the agent reports in `hello`.
pub const AGENT_NAME: &str = "tradeterm-sim";
/// Hour (UTC) of the daily rollover, when swaps are charged.
pub const ROLLOVER_HOUR_UTC: i64 = 22;

/// Settings of one simulated terminal and account.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSettings {
    /// Seed of every random choice (prices, spreads, tick times, calendar values).
    pub seed: u64,
    /// MT4 or MT5 (MT4 has no economic calendar).
    pub platform: Platform,
    /// Account number.
    pub login: u64,
    /// The agent's allow-trading input. Off by default: trade commands then
    /// answer `TRADING_DISABLED`.
    pub allow_trading: bool,
    /// The terminal's automated-trading switch. On by default (as in a
    /// terminal where an expert advisor runs); both switches must be on to trade.
    pub automated_trading: bool,
    /// Clock acceleration used by [`SimSettings::system_clock`] (1 = real time).
    pub speed: f64,
    /// Starting balance in the account currency.
    pub balance: f64,
    /// Account currency (USD, EUR, GBP or JPY; anything else falls back to USD).
    pub currency: String,
    /// Leverage (100 = 1:100).
    pub leverage: u32,
    /// Account holder's name.
    pub name: String,
    /// Trade server name.
    pub server: String,
    /// Broker company.
    pub company: String,
    /// Terminal build reported in `hello`.
    pub build: u32,
    /// Spacing of tick slots in simulated milliseconds (a slot carries at most
    /// one tick per symbol). Larger values make long replays cheaper.
    pub tick_interval_ms: i64,
    /// Ticks kept per symbol for the `ticks` command.
    pub tick_history: usize,
    /// Ignore trading sessions: every symbol trades around the clock (prices
    /// hold still where the replayed data has no bars, e.g. at weekends).
    /// Off by default; meant for demonstrations outside market hours.
    pub always_open: bool,
    /// A hedging account (on by default): every fill is its own position and
    /// `close_by` works. Off: a netting account, one position per symbol
    /// that fills add to, reduce or reverse; `close_by` is refused.
    pub hedging: bool,
}

impl SimSettings {
    /// Demo terminal number `index`: a distinct login and seed per index,
    /// MT5, 10 000 USD at 1:100, trading off.
    pub fn demo(index: u32) -> Self {
        Self {
            seed: 0x7E4D_E000 + u64::from(index),
            platform: Platform::MT5,
            login: 7_100_001 + u64::from(index),
            allow_trading: false,
            automated_trading: true,
            speed: 1.0,
            balance: 10_000.0,
            currency: "USD".into(),
            leverage: 100,
            name: format!("Demo Trader {}", index + 1),
            server: "TradeTerm-Sim".into(),
            company: "tradeterm simulated broker".into(),
            build: 4620,
            tick_interval_ms: 1_000,
            tick_history: 50_000,
            always_open: false,
            hedging: true,
        }
    }

    /// A wall clock running at [`SimSettings::speed`].
    pub fn system_clock(&self) -> Arc<dyn Clock> {
        Arc::new(SystemClock::new(self.speed))
    }
}

impl Default for SimSettings {
    fn default() -> Self {
        Self::demo(0)
    }
}

/// Everything behind the simulator's lock.
#[derive(Debug)]
pub(crate) struct State {
    pub market: Market,
    pub broker: Broker,
    pub permissions: Permissions,
    pub permission_events: Vec<Permissions>,
    /// Instant up to which ticks and rollovers have been processed.
    pub synced_to: UnixMs,
    /// Symbols whose depth of market is subscribed (`market_book_add`).
    pub books: std::collections::BTreeSet<String>,
}

struct Inner {
    settings: SimSettings,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

/// Handle to one simulated terminal: broker, account and market. Cheap to
/// clone; all clones share the same state.
#[derive(Clone)]
pub struct Simulator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.inner.settings;
        f.debug_struct("Simulator")
            .field("login", &s.login)
            .field("seed", &s.seed)
            .field("platform", &s.platform)
            .field("clock", &self.inner.clock)
            .finish_non_exhaustive()
    }
}

/// Serialised form of the simulator's state (for tests and debugging).
#[derive(Debug, Serialize)]
struct Snapshot<'a> {
    synced_to: UnixMs,
    permissions: Permissions,
    broker: &'a Broker,
    market: market::MarketSnapshot<'a>,
}

impl Simulator {
    /// Builds the simulator at the clock's current instant: replayed data is
    /// laid out to end there and the account opens with its initial deposit.
    pub fn new(mut settings: SimSettings, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now_ms();
        let mut defs = symbols::all();
        if settings.always_open {
            defs.iter_mut().for_each(|d| d.spec.sessions.clear());
        }
        let market = Market::new(
            &defs,
            settings.seed,
            settings.tick_interval_ms.max(1),
            settings.tick_history.max(1),
            now,
        );
        let convertible = defs.iter().all(|d| {
            market.rate(&d.spec.currency_profit, &settings.currency).is_some()
                && market.rate(&d.spec.currency_margin, &settings.currency).is_some()
        });
        if !convertible {
            tracing::warn!(currency = %settings.currency, "account currency cannot be converted from every symbol; using USD");
            settings.currency = "USD".into();
        }
        let setup = AccountSetup {
            login: settings.login,
            name: settings.name.clone(),
            server: settings.server.clone(),
            company: settings.company.clone(),
            currency: settings.currency.clone(),
            leverage: settings.leverage.max(1),
            trade_mode: TradeMode::Demo,
            hedging: settings.hedging,
        };
        let broker = Broker::new(setup, settings.balance, now);
        let permissions = Permissions {
            allow_trading: settings.allow_trading,
            automated_trading: settings.automated_trading,
        };
        let state = State {
            market,
            broker,
            permissions,
            permission_events: Vec::new(),
            synced_to: now,
            books: Default::default(),
        };
        Self {
            inner: Arc::new(Inner {
                settings,
                clock,
                state: Mutex::new(state),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-written in
        // a way worse than stopping the simulator: keep serving.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Locks the state after processing every tick and rollover up to now.
    fn synced(&self) -> (MutexGuard<'_, State>, UnixMs) {
        let now = self.inner.clock.now_ms();
        let mut st = self.lock();
        advance(&mut st, now);
        (st, now)
    }

    /// The settings the simulator was built with.
    pub fn settings(&self) -> &SimSettings {
        &self.inner.settings
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The clock's current instant.
    pub fn now_ms(&self) -> UnixMs {
        self.inner.clock.now_ms()
    }

    /// Processes ticks, triggers and rollovers up to the clock's now.
    pub fn sync(&self) {
        drop(self.synced());
    }

    /// Executes one protocol command.
    pub fn execute(&self, command: Command) -> Result<CommandResult, ErrorBody> {
        let (mut st, now) = self.synced();
        exec::execute(&mut st, &self.inner.settings, command, now)
    }

    /// Account state now.
    pub fn account_info(&self) -> AccountInfo {
        let (st, _) = self.synced();
        st.broker.account_info(&st.market)
    }

    /// Open positions.
    pub fn positions(&self) -> Vec<Position> {
        let (st, _) = self.synced();
        st.broker.positions(&st.market, None)
    }

    /// Pending orders.
    pub fn pending_orders(&self) -> Vec<PendingOrder> {
        let (st, _) = self.synced();
        st.broker.orders(None)
    }

    /// Every deal kept, oldest first (the initial deposit included).
    pub fn deals(&self) -> Vec<Deal> {
        let (st, _) = self.synced();
        st.broker.deals(i64::MIN, i64::MAX)
    }

    /// Every finished order kept, oldest first.
    pub fn history_orders(&self) -> Vec<HistoryOrder> {
        let (st, _) = self.synced();
        st.broker.history_orders(i64::MIN, i64::MAX)
    }

    /// Symbol names.
    pub fn symbols(&self) -> Vec<String> {
        self.lock().market.names()
    }

    /// The latest quote of a symbol.
    pub fn tick(&self, symbol: &str) -> Option<Tick> {
        let (st, _) = self.synced();
        st.market.index(symbol).and_then(|i| st.market.tick(i))
    }

    /// Every tick of a symbol kept in the history buffer, oldest first.
    pub fn tick_history(&self, symbol: &str) -> Vec<Tick> {
        let (st, _) = self.synced();
        st.market
            .index(symbol)
            .map(|i| st.market.ticks(i, i64::MIN, i64::MAX, None))
            .unwrap_or_default()
    }

    /// The latest quote of every symbol.
    pub fn latest_ticks(&self) -> Vec<Tick> {
        let (st, _) = self.synced();
        (0..st.market.feeds.len()).filter_map(|i| st.market.tick(i)).collect()
    }

    /// Current trading permissions.
    pub fn permissions(&self) -> Permissions {
        self.lock().permissions
    }

    /// Switches the agent's allow-trading input.
    pub fn set_allow_trading(&self, on: bool) {
        let mut st = self.lock();
        st.permissions.allow_trading = on;
        let p = st.permissions;
        st.permission_events.push(p);
    }

    /// Switches the terminal's automated-trading button.
    pub fn set_automated_trading(&self, on: bool) {
        let mut st = self.lock();
        st.permissions.automated_trading = on;
        let p = st.permissions;
        st.permission_events.push(p);
    }

    /// Takes the events not yet delivered: trade transactions in order,
    /// permission changes, and one account snapshot at the end if anything
    /// changed the account.
    pub fn drain_events(&self) -> Vec<Event> {
        let (mut st, _) = self.synced();
        let mut out = Vec::new();
        let mut account = false;
        for e in st.broker.take_events() {
            match e {
                SimEvent::Trade {
                    transaction,
                    deal,
                    order,
                    position,
                    order_state,
                    position_volume,
                } => {
                    out.push(Event::TradeTransaction {
                        transaction,
                        deal,
                        order,
                        position,
                        order_state,
                        position_volume,
                    });
                }
                SimEvent::Account => account = true,
            }
        }
        out.extend(st.permission_events.drain(..).map(Event::Permissions));
        if account {
            out.push(Event::Account(st.broker.account_info(&st.market)));
        }
        out
    }

    /// The whole broker and market state as JSON: equal strings mean equal states.
    pub fn state_json(&self) -> String {
        let st = self.lock();
        let snap = Snapshot {
            synced_to: st.synced_to,
            permissions: st.permissions,
            broker: &st.broker,
            market: st.market.snapshot(),
        };
        serde_json::to_string(&snap).unwrap_or_default()
    }

    /// The `hello` frame of this terminal.
    pub fn hello(&self, terminal_key: &str, uid: &str) -> Hello {
        let st = self.lock();
        let s = st.broker.setup();
        Hello {
            protocol_version: PROTOCOL_VERSION,
            terminal_key: terminal_key.to_owned(),
            terminal: TerminalIdentity {
                uid: uid.to_owned(),
                platform: self.inner.settings.platform,
                build: self.inner.settings.build,
            },
            account: AccountIdentity {
                login: s.login,
                server: s.server.clone(),
                company: s.company.clone(),
                currency: s.currency.clone(),
                leverage: s.leverage,
                trade_mode: s.trade_mode,
            },
            permissions: st.permissions,
            agent: AgentInfo {
                name: AGENT_NAME.into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
        }
    }
}

/// Processes every tick and rollover in `(synced_to, now]` in time order, an
/// hour of simulated time at a time. At equal instants a rollover comes
/// before ticks, and ticks go by symbol order.
fn advance(st: &mut State, now: UnixMs) {
    const WINDOW: i64 = 3_600_000;
    while st.synced_to < now {
        let a = st.synced_to;
        let b = now.min(a.saturating_add(WINDOW));
        let ticks = st.market.collect(a, b);
        // Rollovers at 22:00 UTC in (a, b].
        let first_day = a.div_euclid(DAY_MS);
        let mut rollovers: Vec<i64> = (first_day..=b.div_euclid(DAY_MS))
            .map(|d| d * DAY_MS + ROLLOVER_HOUR_UTC * 3_600_000)
            .filter(|&r| r > a && r <= b)
            .collect();
        rollovers.reverse();
        for (t, idx, q) in ticks {
            while rollovers.last().is_some_and(|&r| r <= t) {
                if let Some(r) = rollovers.pop() {
                    st.broker.rollover(&st.market, r);
                }
            }
            st.broker.expire(&st.market, t);
            st.market.apply(idx, q);
            st.broker.on_tick(&st.market, idx);
        }
        while let Some(r) = rollovers.pop() {
            st.broker.rollover(&st.market, r);
        }
        st.broker.expire(&st.market, b);
        st.synced_to = b;
    }
}

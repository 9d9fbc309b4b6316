//! The context ledger: where a run's (or a thread's) prompt tokens went. Every figure is
//! tokens of the text sent (o200k, or estimated as `counted` says): message contents and
//! tool-call names and arguments, tool schemas as the JSON a provider receives; the few
//! tokens of framing a provider adds per message are not counted.

use serde::{Deserialize, Serialize};

/// What one model call was sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTokens {
    /// The run's model call (turn) it was.
    pub turn: u32,
    /// The system prompt (the deferred listing included).
    pub system: u64,
    /// The bound tools' schemas.
    pub tools: u64,
    /// User and assistant messages (and summaries), tool calls included.
    pub history: u64,
    /// Tool results.
    pub results: u64,
}

impl CallTokens {
    /// Everything the call was sent.
    pub fn total(&self) -> u64 {
        self.system + self.tools + self.history + self.results
    }
}

/// Sums over model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTotals {
    /// How many model calls.
    pub calls: u64,
    /// [`CallTokens::system`], summed.
    pub system: u64,
    /// [`CallTokens::tools`], summed.
    pub tools: u64,
    /// [`CallTokens::history`], summed.
    pub history: u64,
    /// [`CallTokens::results`], summed.
    pub results: u64,
}

/// One server with deferred tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerTokens {
    /// Its key in `mcpServers`.
    pub name: String,
    /// How many of its tools are deferred.
    pub deferred_tools: u64,
    /// What its part of the system prompt's listing costs on every call: its tools' names
    /// or its one line.
    pub listed_tokens: u64,
    /// Promotions of its tools.
    pub promoted: u64,
    /// The schema tokens those promotions brought in.
    pub schema_tokens: u64,
    /// Calls of its tools.
    pub calls: u64,
    /// Their results' tokens (after the output budget).
    pub result_tokens: u64,
}

/// One tool that was promoted or called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTokens {
    /// The name the model calls it by.
    pub name: String,
    /// Its MCP server, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Whether the listing names it (a `names` listing of a deferred tool).
    pub listed: bool,
    /// Its line in the listing.
    pub listed_tokens: u64,
    /// How many times it was promoted.
    pub promoted: u64,
    /// One copy of its schema; its server's `schema_tokens` counts one per promotion.
    pub schema_tokens: u64,
    /// How many times it was called.
    pub calls: u64,
    /// Its results' tokens (after the output budget).
    pub result_tokens: u64,
}

/// How a ledger's figures were come by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Counting {
    /// Counted with the o200k tokenizer (what ledgers stored before estimates were).
    #[default]
    O200k,
    /// Estimated without a tokenizer: within 10% of o200k on tool schemas and prose, and
    /// never more than 6x under on any text.
    Estimate,
}

impl Counting {
    /// `o200k` or `estimate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200k => "o200k",
            Self::Estimate => "estimate",
        }
    }
}

/// Where the tokens of a run, or of a thread so far, went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// How its figures were counted (a thread's: `estimate` once any run's was).
    #[serde(default)]
    pub counted: Counting,
    /// Runs counted (1 for a run).
    pub runs: u64,
    /// A thread's runs whose ledger was not taken (see the README).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runs_without_ledger: u64,
    /// Each model call of a run, in order (a thread keeps only `totals`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallTokens>,
    /// The sums over every model call.
    pub totals: CallTotals,
    /// The deferred listing's tokens (part of every call's system prompt).
    pub listing_tokens: u64,
    /// The `<available-skills>` listing's tokens (part of every call's system prompt too).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skills_listing_tokens: u64,
    /// The servers with deferred tools, in catalog order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerTokens>,
    /// The tools promoted or called, in the order first seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolTokens>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

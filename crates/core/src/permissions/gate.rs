//! The call gate: one ordered chain of async checks before each tool call, and the same
//! chain's hooks after it. The policy is the first gate; any other (the user's hooks) comes
//! after it, in order, and may refuse, approve, ask, or rewrite the call's input. Only once
//! every gate has spoken is the user asked, so that a program can approve what would ask.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Admitted, Permissions, Verdict, refuse};
use crate::protocol::Denial;
use crate::tools::{PreparedCall, Tool, ToolContext, ToolOutput};

/// What a gate's check returns: `Err` is the refusal the model reads.
pub type GateFuture<'a> = BoxFuture<'a, Result<(), ToolOutput>>;

/// What the gates decided so far about one call.
#[derive(Debug, Clone)]
pub struct Admission {
    /// The policy's verdict (for the call's input as it is now).
    pub verdict: Verdict,
    /// Who approved a call the policy would ask about (counts as the user's approval, never
    /// against a deny rule).
    pub approved_by: Option<String>,
    /// A gate wants the user asked even where the policy allows, and why.
    pub ask: Option<String>,
}

impl Admission {
    /// The policy's verdict, nothing else said yet.
    pub fn new(verdict: Verdict) -> Self {
        Self {
            verdict,
            approved_by: None,
            ask: None,
        }
    }
}

/// One gate after the policy.
pub trait CallGate: Send + Sync {
    /// Checks `call` before it runs; may rewrite its input, approve it, or make it ask.
    fn before<'a>(
        &'a self,
        ctx: &'a ToolContext<'a>,
        call: &'a mut PreparedCall,
        tool: &'a dyn Tool,
        admission: &'a mut Admission,
    ) -> GateFuture<'a>;

    /// Sees the output of a call that ran; may add to it.
    fn after<'a>(
        &'a self,
        ctx: &'a ToolContext<'a>,
        call: &'a PreparedCall,
        tool: &'a dyn Tool,
        output: &'a mut ToolOutput,
    ) -> BoxFuture<'a, ()>;
}

/// The policy and the gates after it, in order.
#[derive(Clone)]
pub struct CallGates {
    permissions: Arc<Permissions>,
    gates: Vec<Arc<dyn CallGate>>,
}

impl std::fmt::Debug for CallGates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallGates")
            .field("permissions", &self.permissions)
            .field("gates", &self.gates.len())
            .finish()
    }
}

impl CallGates {
    /// The policy alone.
    pub fn new(permissions: Arc<Permissions>) -> Self {
        Self {
            permissions,
            gates: Vec::new(),
        }
    }

    /// Every call runs (tests, agents built without a session).
    pub fn allow_all() -> Self {
        Self::new(Arc::new(Permissions::allow_all()))
    }

    /// Appends `gate` after the ones there.
    pub fn with(mut self, gate: Arc<dyn CallGate>) -> Self {
        self.gates.push(gate);
        self
    }

    /// Lets `call` run or refuses it: the policy, then each gate, then (when still needed)
    /// the user's answer. A gate that rewrites the input has it checked by the policy
    /// again: a rewrite never reaches what a deny rule refuses.
    pub async fn admit<'p>(
        &'p self,
        ctx: &ToolContext<'_>,
        call: &mut PreparedCall,
        tool: &dyn Tool,
    ) -> Result<Admitted<'p>, ToolOutput> {
        let mut admission = Admission::new(self.permissions.verdict(call, tool));
        if let Verdict::Deny { reason } = &admission.verdict {
            return Err(refuse(ctx, call, Denial::Rule, reason, None));
        }
        for gate in &self.gates {
            let input = call.arguments.clone();
            gate.before(ctx, call, tool, &mut admission).await?;
            if call.arguments != input {
                match self.permissions.verdict(call, tool) {
                    Verdict::Deny { reason } => {
                        return Err(refuse(ctx, call, Denial::Rule, &reason, None));
                    }
                    // The rewritten call asks where the first did not; an approval given
                    // for it still counts.
                    ask @ Verdict::Ask { .. } => admission.verdict = ask,
                    Verdict::Allow => {}
                }
            }
        }
        self.permissions.resolve(ctx, call, tool, admission).await
    }

    /// Lets every gate see the output of a call that ran, in order.
    pub async fn after(
        &self,
        ctx: &ToolContext<'_>,
        call: &PreparedCall,
        tool: &dyn Tool,
        output: &mut ToolOutput,
    ) {
        for gate in &self.gates {
            gate.after(ctx, call, tool, output).await;
        }
    }
}

//! The proxy's server, counting the requests it is handling. rmcp starts a task for
//! every request it reads, however many wait on the upstream; the lane reads no more
//! of the agent's calls while too many do (see `lane::MOST_AT_ONCE`), so that an agent
//! flooding the proxy with requests is made to wait instead of filling its memory.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::ProtocolVersion;
use rmcp::service::{NotificationContext, RequestContext, Service};
use rmcp::{ErrorData, RoleServer};

use crate::mcp::in_flight::InFlight;

/// `inner`, with the requests it is handling counted in `handling`.
pub struct Counted<S> {
    inner: S,
    handling: Arc<InFlight>,
}

impl<S> Counted<S> {
    /// `inner`, counting in `handling`.
    pub fn new(inner: S, handling: Arc<InFlight>) -> Counted<S> {
        Counted { inner, handling }
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for Counted<S> {
    fn handle_request(
        &self,
        request: <RoleServer as rmcp::service::ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<<RoleServer as rmcp::service::ServiceRole>::Resp, ErrorData>>
    + Send
    + '_ {
        let handling = self.handling.start();
        let answer = self.inner.handle_request(request, context);
        async move {
            let answer = answer.await;
            drop(handling);
            answer
        }
    }

    fn handle_notification(
        &self,
        notification: <RoleServer as rmcp::service::ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        self.inner.handle_notification(notification, context)
    }

    fn get_info(&self) -> <RoleServer as rmcp::service::ServiceRole>::Info {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

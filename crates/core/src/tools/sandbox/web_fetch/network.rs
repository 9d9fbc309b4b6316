//! Where `web_fetch` may connect. By default not to loopback, link-local, private,
//! unique-local or other non-public addresses: a prompt-injected fetch must not reach the
//! machine's own services (a database admin page, a cloud metadata endpoint) or the LAN's.
//! Every hop is checked, redirects included, after DNS resolution; the client's own
//! resolver applies the same rule at connect time, so a name that changes its answer
//! between the check and the connection gains nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The setting that allows private addresses, named in every refusal.
pub(super) const SETTING: &str = "sandbox.web_fetch.allow_private_networks";

/// Which addresses may be reached.
#[derive(Debug, Clone, Default)]
pub(super) struct NetworkPolicy {
    allow_private: bool,
    /// Requests go through a proxy, which resolves names itself: a name is then judged
    /// only by what it says (`localhost`), and the proxy's own host is reachable.
    proxy_hosts: Vec<String>,
    /// Addresses allowed although not public: only tests set them, to follow a redirect
    /// from a loopback server to a refused address.
    exceptions: Vec<IpAddr>,
}

/// Why an address is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Blocked {
    pub addr: IpAddr,
    /// What kind of address it is.
    pub kind: &'static str,
}

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is {}; web_fetch reaches public addresses only (set {SETTING}: true in \
             config.yaml to allow it)",
            self.addr, self.kind
        )
    }
}

impl NetworkPolicy {
    /// The policy of `sandbox.web_fetch`.
    pub(super) fn new(allow_private: bool) -> Self {
        Self {
            allow_private,
            proxy_hosts: Vec::new(),
            exceptions: Vec::new(),
        }
    }

    /// The policy for a client that sends requests through the proxies of `proxy_urls`
    /// (`HTTPS_PROXY` and friends).
    pub(super) fn with_proxies(mut self, proxy_urls: &[String]) -> Self {
        self.proxy_hosts = proxy_urls
            .iter()
            .filter_map(|raw| {
                let url = if raw.contains("://") {
                    Url::parse(raw)
                } else {
                    Url::parse(&format!("http://{raw}"))
                };
                url.ok()?
                    .host_str()
                    .map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase())
            })
            .collect();
        self
    }

    /// Also allows `addr` (tests only).
    #[cfg(test)]
    pub(super) fn with_exception(mut self, addr: IpAddr) -> Self {
        self.exceptions.push(addr);
        self
    }

    /// Whether everything may be reached.
    pub(super) fn allows_all(&self) -> bool {
        self.allow_private
    }

    /// Whether `addr` may be reached.
    pub(super) fn check(&self, addr: IpAddr) -> Result<(), Blocked> {
        if self.allow_private || self.exceptions.contains(&addr) {
            return Ok(());
        }
        match non_public(addr) {
            Some(kind) => Err(Blocked { addr, kind }),
            None => Ok(()),
        }
    }

    /// Checks the host of `url`: an address as written, or every address its name
    /// resolves to (one refused address refuses the URL: a name that also points inside
    /// is not trusted with the rest).
    pub(super) async fn check_url(&self, url: &Url) -> Result<(), HopError> {
        if self.allow_private {
            return Ok(());
        }
        let host = match url.host() {
            Some(url::Host::Ipv4(ip)) => {
                return self.check(IpAddr::V4(ip)).map_err(HopError::Blocked);
            }
            Some(url::Host::Ipv6(ip)) => {
                return self.check(IpAddr::V6(ip)).map_err(HopError::Blocked);
            }
            Some(url::Host::Domain(name)) => name.to_ascii_lowercase(),
            None => return Ok(()),
        };
        if host == "localhost" || host.ends_with(".localhost") {
            return Err(HopError::Blocked(Blocked {
                addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
                kind: "a loopback address (`localhost`)",
            }));
        }
        if !self.proxy_hosts.is_empty() {
            // The proxy resolves the name; the filtering resolver covers what goes direct.
            return Ok(());
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| HopError::Resolve(host.clone(), e.to_string()))?;
        for addr in addrs {
            self.check(addr.ip()).map_err(HopError::Blocked)?;
        }
        Ok(())
    }
}

/// Why a hop may not be fetched.
#[derive(Debug)]
pub(super) enum HopError {
    /// The address is refused.
    Blocked(Blocked),
    /// The name does not resolve.
    Resolve(String, String),
}

/// The kind of a non-public address, `None` for a public one.
fn non_public(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("a broadcast, multicast or reserved address")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("an IETF protocol address")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking address")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4 address carried in IPv6 (mapped, compatible, NAT64) is judged as IPv4.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let segments = ip.segments();
    let o = ip.octets();
    let embedded = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return non_public_v4(embedded);
    }
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if segments[0] & 0xfe00 == 0xfc00 {
        Some("a unique-local address")
    } else if segments[0] & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if segments[..6] == [0, 0, 0, 0, 0, 0] {
        // IPv4-compatible (deprecated) ::a.b.c.d.
        non_public_v4(embedded).or(Some("a reserved address"))
    } else {
        None
    }
}

/// The client's resolver: the system's, with refused addresses removed, so that even a
/// connection the hop check did not foresee never reaches one. The proxy's own host is
/// resolved as is (a proxy on the LAN is the user's choice).
pub(super) struct FilteringResolver {
    policy: NetworkPolicy,
}

impl FilteringResolver {
    /// A resolver applying `policy`.
    pub(super) fn new(policy: NetworkPolicy) -> Arc<Self> {
        Arc::new(Self { policy })
    }
}

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        let is_proxy = policy.proxy_hosts.contains(&host.to_ascii_lowercase());
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if is_proxy {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let mut refused = None;
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| match policy.check(addr.ip()) {
                    Ok(()) => true,
                    Err(blocked) => {
                        refused.get_or_insert(blocked);
                        false
                    }
                })
                .collect();
            match (allowed.is_empty(), refused) {
                (true, Some(blocked)) => Err(blocked.to_string().into()),
                _ => Ok(Box::new(allowed.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(addr: &str) -> bool {
        NetworkPolicy::new(false)
            .check(addr.parse().unwrap())
            .is_err()
    }

    #[test]
    fn non_public_addresses_of_every_kind_are_refused() {
        for addr in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "::127.0.0.1",
        ] {
            assert!(refused(addr), "{addr}");
        }
        for addr in [
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "2606:4700::1111",
            "64:ff9b::101:101",
        ] {
            assert!(!refused(addr), "{addr}");
        }
        assert!(
            NetworkPolicy::new(true)
                .check("127.0.0.1".parse().unwrap())
                .is_ok()
        );
    }

    #[test]
    fn the_refusal_names_the_setting() {
        let err = NetworkPolicy::new(false)
            .check("169.254.169.254".parse().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("link-local") && err.contains(SETTING), "{err}");
    }

    #[tokio::test]
    async fn behind_a_proxy_names_are_left_to_it_but_localhost_and_addresses_are_not() {
        let policy = NetworkPolicy::new(false).with_proxies(&["proxy.corp:3128".into()]);
        let ok = Url::parse("http://no-such-name.invalid/").unwrap();
        assert!(policy.check_url(&ok).await.is_ok(), "the proxy resolves it");
        for refused in [
            "http://localhost:1/",
            "http://a.localhost/",
            "http://10.0.0.1/",
        ] {
            let url = Url::parse(refused).unwrap();
            assert!(
                matches!(policy.check_url(&url).await, Err(HopError::Blocked(_))),
                "{refused}"
            );
        }
    }

    #[tokio::test]
    async fn names_are_judged_by_what_they_resolve_to() {
        let policy = NetworkPolicy::new(false);
        let url = Url::parse("http://localhost:9/").unwrap();
        assert!(matches!(
            policy.check_url(&url).await,
            Err(HopError::Blocked(_))
        ));
        let url = Url::parse("http://[::ffff:7f00:1]/").unwrap();
        assert!(matches!(
            policy.check_url(&url).await,
            Err(HopError::Blocked(_))
        ));
        let url = Url::parse("http://2130706433/").unwrap();
        assert!(matches!(
            policy.check_url(&url).await,
            Err(HopError::Blocked(_))
        ));
    }
}

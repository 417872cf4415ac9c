//! A blocking netlink request/answer loop shared by rtnetlink and ethtool
//! generic netlink: send one message, collect the answers up to the ACK
//! or the end of the dump, and turn a kernel error into an io::Error.

use crate::HostError;
use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkDeserializable, NetlinkHeader, NetlinkMessage,
    NetlinkPayload, NetlinkSerializable,
};
use netlink_sys::Socket;
use std::fmt::Debug;
use std::io;

/// One netlink socket of one protocol.
pub(crate) struct Nl {
    sock: Socket,
    seq: u32,
}

impl Nl {
    /// Opens and binds a socket of `protocol` (NETLINK_ROUTE, NETLINK_GENERIC).
    pub(crate) fn open(protocol: isize) -> Result<Nl, HostError> {
        let mut sock =
            Socket::new(protocol).map_err(|e| HostError::netlink("open a netlink socket", e))?;
        sock.bind_auto()
            .map_err(|e| HostError::netlink("bind a netlink socket", e))?;
        let _ = sock.set_ext_ack(true);
        Ok(Nl { sock, seq: 0 })
    }

    /// Dumps every object of one kind (links, addresses, routes...).
    pub(crate) fn dump<I>(&mut self, payload: I, what: &str) -> Result<Vec<I>, HostError>
    where
        I: NetlinkSerializable + NetlinkDeserializable + Debug,
    {
        self.exchange(payload, NLM_F_DUMP, what)
    }

    /// Sends a request that the kernel acknowledges, returning any answers
    /// that came before the ACK (a GET of one object returns that object).
    pub(crate) fn request<I>(
        &mut self,
        payload: I,
        flags: u16,
        what: &str,
    ) -> Result<Vec<I>, HostError>
    where
        I: NetlinkSerializable + NetlinkDeserializable + Debug,
    {
        self.exchange(payload, flags | NLM_F_ACK, what)
    }

    fn exchange<I>(&mut self, payload: I, flags: u16, what: &str) -> Result<Vec<I>, HostError>
    where
        I: NetlinkSerializable + NetlinkDeserializable + Debug,
    {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = self.seq;
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(payload));
        msg.finalize();
        let mut buf = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut buf);
        self.sock
            .send(&buf, 0)
            .map_err(|e| HostError::netlink(what, e))?;
        let mut out = Vec::new();
        loop {
            let (data, _) = self
                .sock
                .recv_from_full()
                .map_err(|e| HostError::netlink(what, e))?;
            if data.is_empty() {
                return Err(HostError::netlink(
                    what,
                    io::Error::other("the socket closed"),
                ));
            }
            let mut off = 0;
            while off + 16 <= data.len() {
                let len =
                    u32::from_ne_bytes([data[off], data[off + 1], data[off + 2], data[off + 3]])
                        as usize;
                if len < 16 || off + len > data.len() {
                    return Err(HostError::Decode {
                        what: what.into(),
                        detail: format!("bad length {len}"),
                    });
                }
                let seq = u32::from_ne_bytes([
                    data[off + 8],
                    data[off + 9],
                    data[off + 10],
                    data[off + 11],
                ]);
                let frame = &data[off..off + len];
                off += (len + 3) & !3;
                if seq != self.seq {
                    continue;
                }
                let parsed =
                    NetlinkMessage::<I>::deserialize(frame).map_err(|e| HostError::Decode {
                        what: what.into(),
                        detail: e.to_string(),
                    })?;
                match parsed.payload {
                    NetlinkPayload::InnerMessage(m) => out.push(m),
                    NetlinkPayload::Done(_) => return Ok(out),
                    NetlinkPayload::Error(e) => {
                        return match e.code {
                            None => Ok(out),
                            Some(code) => Err(HostError::netlink(
                                what,
                                io::Error::from_raw_os_error(-code.get()),
                            )),
                        };
                    }
                    _ => {}
                }
            }
        }
    }
}

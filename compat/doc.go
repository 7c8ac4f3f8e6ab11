// Package compat reads and writes Eureka's wire formats byte for byte: the
// legacy JSON codec (EurekaJacksonCodec) and XStream XML of the Java server,
// full and compact, plus peer replication batches. apps__hashcode is
// computed by registry (Applications.ReconcileHashCode, HashCode); compat
// only writes and reads the field.
//
// # Writing
//
// Encoders are hand-written appenders (no reflection) that reproduce the
// Java server's output (NF §2.1, §2.4):
//
//   - Roots "applications", "application", "instance"; "application" and
//     "instance" are always arrays in JSON (repeated elements in XML).
//   - versions__delta and apps__hashcode are JSON strings; port "$" is a
//     number and "@enabled" a string; countryId and leaseInfo are numbers;
//     the @Auto fields (URLs, VIPs, appGroupName, asgName, actionType,
//     isCoordinatingDiscoveryServer, lastUpdatedTimestamp,
//     lastDirtyTimestamp) are strings, omitted when empty, except that
//     isCoordinatingDiscoveryServer and the two timestamps are always
//     written ("false", "0").
//   - instanceId is omitted when empty, sid when empty, "na" or "unknown".
//     overriddenStatus (XML: overriddenstatus) is always written.
//   - dataCenterInfo always carries @class (XML: class):
//     InstanceInfo$DefaultDataCenterInfo, or AmazonInfo plus metadata for
//     the Amazon kind.
//   - Metadata keys are sorted for determinism; "@class" is never written as
//     a key; an empty map is {"@class":"java.util.Collections$EmptyMap"}
//     (XML: <metadata class="java.util.Collections$EmptyMap"/>).
//   - leaseInfo comes from the LeaseView (the server's lease), timestamps in
//     epoch millis with 0 for the zero time.
//   - JSON strings are escaped like Jackson: `"`, `\`, \b \t \n \f \r and
//     \u00XX for other control characters; `/` and non-ASCII are written as
//     they are. Invalid UTF-8 becomes U+FFFD.
//   - XML is XStream's pretty print: two-space indentation, no declaration,
//     no trailing newline, text escaped as PrettyPrintWriter's XML_QUIRKS
//     mode (& < > " ' as entities, \r as &#xd;, control and unassigned BMP
//     characters as &#x..;). Metadata keys are element names encoded by
//     XmlFriendlyNameCoder: '_' doubled, '$' as "_-".
//
// Deliberate difference: XStream writes a key with no '$', '_' or
// non-ASCII character unchanged even when it is not an XML name ("1st",
// "a b"), producing broken XML. We write such keys with XStream's own
// slow-path escape (each invalid character as "_." and four hex digits),
// which XStream's reader decodes back to the key. The empty key cannot be
// an element name and is left out of XML.
//
// Compact (X-Eureka-Accept: compact, NF §2.5), captured from the stock
// server (testdata/stock): per instance instanceId, app, ipAddr, vipAddress,
// secureVipAddress, dataCenterInfo (Amazon metadata cut to instance-id,
// public-ipv4, public-hostname, local-ipv4, availability-zone), hostName,
// status, lastUpdatedTimestamp (a JSON number), actionType, asgName, port,
// securePort, with ports in the legacy shape, and versions__delta and
// apps__hashcode after the application list. Compact XML is the same list
// on one line (Jackson XML, no indentation). The empty Amazon metadata in
// XML is written as <metadata/>.
//
// The single-instance reads answer AppendInstanceResponse: XML statuses
// other than UP, DOWN and STARTING as DOWN (V1AwareInstanceInfoConverter),
// JSON characters outside the BMP as two \u escapes (Jackson's UTF-8
// generator).
//
// Codecs: eureka.server.json-codec-name=JacksonJson and
// xml-codec-name=JacksonXml make the Java server write the full registry
// documents with plain Jackson data binding; Codecs selects that shape
// (codec.go: other field order, sid always, JSON booleans and numbers,
// XML on one line with overriddenStatus and <metadata/>). Compact documents
// and single-instance reads are the same under every codec (captured).
//
// Order: applications, instances and metadata keys are written sorted. The
// Java server writes them in its hash maps' iteration order, which depends
// on the tables' history; the golden comparison with captures
// (server/stock_fidelity_test.go) ignores that order and nothing else.
//
// # Reading
//
// Decoders are lenient like the Java server (NF §2.2, §2.3) and never
// panic: unknown fields are ignored; scalars may be strings, numbers or
// booleans and null means absent; "application" and "instance" may be one
// object or an array; overriddenStatus and the legacy overriddenstatus are
// both read (camel case wins); leaseInfo's legacy renewalTimestamp stands in
// for lastRenewalTimestamp; "@class" is dropped from metadata; statuses are
// case-sensitive in JSON and upper-cased in XML, unknown ones become
// UNKNOWN; absent ports are 7001 (enabled) and 7002 (disabled), port is
// enabled unless "false" and securePort only if "true"; countryId defaults
// to 1; dataCenterInfo may lack @class and keeps unknown names as given;
// sid "na" and "unknown" read as empty (the default); actionType other than
// ADDED, MODIFIED or DELETED is dropped; timestamps of 0 or absent are the
// zero time. Spring Cloud's rule is applied: an instance without
// instanceId but with metadata instanceId gets hostName + ":" + that id
// unless it already starts with the host name. Results are normalized
// (registry.Instance.Normalize).
//
// XML is parsed by encoding/xml in strict mode, which expands no entity
// besides the five predefined ones and character references; DOCTYPE and
// other directives are refused outright, as are encodings other than UTF-8
// and nesting deeper than 64 elements.
//
// # Replication
//
// Batches (NF §2.7) carry exactly the keys of ReplicationInstance and
// ReplicationInstanceResponse, nothing else, since the Java peer's
// ObjectMapper rejects unknown properties. Decoding returns one item per
// element even when an element is unreadable, so a server can answer
// each item on its own.
//
// # Leases
//
// The Java Lease.renew sets lastUpdateTimestamp to now + duration, so
// leaseInfo.lastRenewalTimestamp is in the future and expiry happens after
// about twice the duration. This package writes whatever the LeaseView
// holds; copying that quirk (or not) is the registry's decision.
package compat

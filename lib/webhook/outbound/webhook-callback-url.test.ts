import { describe, expect, it } from "vitest";
import { callbackUrlRefusal, canonicalHost, validateCallbackUrl } from "./webhook-callback-url.ts";

const refusal = (url: string, allowedHosts: string[] = []) => {
  try {
    validateCallbackUrl(url, { allowedHosts });
    return null;
  } catch (error) {
    return (error as Error).message;
  }
};

describe("callback URL rules", () => {
  it("accepts public https URLs, on the default or an ordinary port", () => {
    for (const url of [
      "https://hooks.example.com/stripe",
      "https://hooks.example.com:8443/x?y=1",
      "https://8.8.8.8/hook",
      "https://[2001:4860:4860::8888]/hook",
      "https://hooks.example.com:443/",
      "https://hooks.example.com:80/",
    ]) {
      expect(refusal(url), url).toBeNull();
    }
  });

  it.each([
    ["not a url", "not a valid absolute URL"],
    ["http://hooks.example.com/", "must use https:"],
    ["ftp://hooks.example.com/", "must use https:"],
    ["https://user:pass@hooks.example.com/", "credentials"],
    ["https://user@hooks.example.com/", "credentials"],
    ["https://hooks.example.com/#frag", "fragment"],
    ["https://hooks.example.com:22/", "port 22"],
    ["https://hooks.example.com:25/", "port 25"],
    ["https://hooks.example.com:6379/", "port 6379"],
    ["https://hooks.example.com:5432/", "port 5432"],
    ["https://hooks.example.com:2375/", "port 2375"],
    ["https://localhost/", "not allowed"],
    ["https://api.localhost/", "not allowed"],
    ["https://localhost./", "not allowed"],
    ["https://printer.local/", "not allowed"],
    ["https://metadata.google.internal/", "not allowed"],
    ["https://router.home.arpa/", "not allowed"],
    ["https://1.0.0.127.in-addr.arpa/", "not allowed"],
    ["https://hooks.invalid/", ".invalid is a special-use domain name"],
    ["https://hooks.test/", ".test is a special-use domain name"],
    ["https://hooks.example/", ".example is a special-use domain name"],
    ["https://Api.LocalHost./", ".localhost is a special-use domain name"],
    ["https://abcdefghijklmnop.onion/", ".onion is a special-use domain name"],
    ["https://hooks.alt/", ".alt is a special-use domain name"],
    ["https://test/", "special-use domain name"],
    ["https://redis/", "not a fully qualified domain name"],
    ["https://metadata/", "not allowed"],
    ["https://kubernetes/", "not a fully qualified domain name"],
    ["https://127.0.0.1/", "loopback"],
    ["https://0x7f.1/", "loopback"],
    ["https://2130706433/", "loopback"],
    ["https://0177.0.0.1:8443/", "loopback"],
    ["https://169.254.169.254/latest/meta-data/", "link-local"],
    ["https://0xa9fea9fe/", "link-local"],
    ["https://[::1]/", "loopback"],
    ["https://[::ffff:169.254.169.254]/", "IPv4-mapped"],
    ["https://[64:ff9b::10.0.0.1]/", "NAT64"],
    ["https://[2002:c0a8:101::1]/", "6to4"],
    ["https://[fd00::1]/", "unique-local"],
    ["https://[fe80::1]/", "link-local"],
    ["https://100.100.100.200/", "CGNAT"],
  ])("refuses %s", (url, reason) => {
    expect(refusal(url)).toContain(reason);
  });

  it("lets allowlisted hosts use http: and internal addresses, but not credentials or denied ports", () => {
    const allowed = ["localhost", "127.0.0.1", "[::1]", "hooks.internal", "receiver.test"];
    for (const url of [
      "http://localhost:4000/hooks",
      "http://LOCALHOST.:4000/hooks",
      "http://127.0.0.1:4000/",
      "http://0x7f.0.0.1:4000/",
      "http://[0:0:0:0:0:0:0:1]:4000/",
      "https://hooks.internal/",
      "http://receiver.test:8080/",
    ]) {
      expect(refusal(url, allowed), url).toBeNull();
    }
    expect(refusal("http://u:p@localhost:4000/", allowed)).toContain("credentials");
    expect(refusal("http://localhost:6379/", allowed)).toContain("port 6379");
    expect(refusal("http://127.0.0.2:4000/", allowed)).toContain("https:");
    expect(refusal("https://127.0.0.2:4000/", allowed)).toContain("loopback");
  });

  it("spells each host one way", () => {
    expect(canonicalHost("[0:0::FFFF:7F00:1]")).toBe("::ffff:7f00:1");
    expect(canonicalHost("0x7F.1")).toBe("127.0.0.1");
    expect(canonicalHost("Hooks.Example.COM.")).toBe("hooks.example.com");
  });

  it("remembers each URL's verdict per allowlist, the same verdict the rules give", () => {
    const none: string[] = [];
    const local = ["localhost"];
    for (const url of ["https://hooks.example.com/x", "http://localhost:4000/", "https://10.0.0.1/", "nope"]) {
      for (const allowedHosts of [none, local]) {
        const expected = refusal(url, allowedHosts);
        // Asked twice: worked out, then remembered.
        expect(callbackUrlRefusal(url, { allowedHosts }), url).toBe(expected);
        expect(callbackUrlRefusal(url, { allowedHosts }), url).toBe(expected);
      }
    }
    expect(callbackUrlRefusal("http://localhost:4000/", { allowedHosts: none })).toContain("https:");
    expect(callbackUrlRefusal("http://localhost:4000/", { allowedHosts: local })).toBeNull();
  });
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { proxyFor } from "../../src/sidecar/egress/proxy.ts";

const via = (url: string, noProxy: string, https = "http://proxy:3128", http = "") => proxyFor(url, { https, http, noProxy }) || "direct";

test("NO_PROXY: domains, subdomains, wildcards, ports, IPs and CIDR ranges go direct; everything else through the proxy", () => {
  const cases: [string, string, string][] = [
    ["https://beacon.vendor.test/v1", "", "proxy"],
    ["https://beacon.vendor.test/v1", "*", "direct"],
    ["https://beacon.vendor.test/v1", "vendor.test", "direct"],
    ["https://beacon.vendor.test/v1", ".vendor.test", "direct"],
    ["https://beacon.vendor.test/v1", "*.vendor.test", "direct"],
    ["https://beacon.vendor.test/v1", "Beacon.Vendor.Test", "direct"],
    ["https://beacon.vendor.test/v1", "notvendor.test", "proxy"],
    ["https://evilvendor.test/v1", "vendor.test", "proxy"],
    ["https://beacon.vendor.test/v1", "localhost, 127.0.0.1 beacon.vendor.test", "direct"],
    ["https://beacon.vendor.test/v1", "beacon.vendor.test:443", "direct"],
    ["https://beacon.vendor.test/v1", "beacon.vendor.test:8443", "proxy"],
    ["https://beacon.vendor.test:8443/v1", "beacon.vendor.test:8443", "direct"],
    ["https://10.1.2.3/v1", "10.1.2.3", "direct"],
    ["https://10.1.2.3/v1", "10.0.0.0/8", "direct"],
    ["https://11.1.2.3/v1", "10.0.0.0/8", "proxy"],
    ["https://[::1]:9/v1", "::1", "direct"],
    ["https://[::1]:9/v1", "[::1]:9", "direct"],
    ["https://[::1]:9/v1", "[::1]:10", "proxy"],
  ];
  for (const [url, noProxy, expected] of cases) {
    assert.equal(via(url, noProxy) === "direct" ? "direct" : "proxy", expected, `${url} with NO_PROXY=${JSON.stringify(noProxy)}`);
  }
});

test("https uses HTTPS_PROXY, else HTTP_PROXY; http uses only HTTP_PROXY", () => {
  assert.equal(via("https://b.test", "", "http://s:1", "http://p:2"), "http://s:1");
  assert.equal(via("https://b.test", "", "", "http://p:2"), "http://p:2");
  assert.equal(via("http://b.test", "", "http://s:1", ""), "direct");
  assert.equal(via("http://b.test", "", "http://s:1", "http://p:2"), "http://p:2");
});

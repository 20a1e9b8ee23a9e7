// Realistic private values, in the encodings they arrive in, for the privacy filter's tests: each with the parts of
// it that must never leave the instance.

/** A private value as it might be sent, and the parts of it that must not leave. */
export interface Private {
  value: string;
  secrets: string[];
}

export const CORPUS: Record<string, Private> = {
  email: { value: "alice.smith@corp.example", secrets: ["alice.smith", "alice.smith@"] },
  "e-mail, percent-encoded": { value: "dave%40corp.example", secrets: ["dave%40", "dave"] },
  "e-mail, internationalised": { value: "jürgen.müller@beispiel.de", secrets: ["jürgen", "müller@"] },
  "e-mail, in a metric name": { value: "logins.alice@corp.example", secrets: ["alice@", "logins.alice"] },
  "AWS access key id": { value: "aws_key: key AKIAIOSFODNN7EXAMPLE", secrets: ["AKIAIOSFODNN7EXAMPLE"] },
  "AWS secret access key": { value: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", secrets: ["wJalrXUtnFEMI", "bPxRfiCYEXAMPLEKEY"] },
  "base64 secret with + and /": { value: "token q8Zr+4kT/9xWm2Lp0vB7nE==", secrets: ["q8Zr+4kT", "9xWm2Lp0vB7nE"] },
  JWT: { value: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.c2lnbmF0dXJl", secrets: ["eyJzdWIiOiJqYW5lIn0"] },
  "bearer token": { value: "Authorization: Bearer 9f8e7d6c5b4a", secrets: ["9f8e7d6c5b4a"] },
  "key=value": { value: "password=hunter2", secrets: ["hunter2"] },
  "secret in a JSON-ish text": { value: '{"api_key": "ak_live_b7c1"}', secrets: ["ak_live_b7c1"] },
  "card number, spaced": { value: "card 4111 1111 1111 1111 declined", secrets: ["4111 1111 1111 1111", "1111 1111"] },
  "card number, dashed": { value: "5500-0000-0000-0004", secrets: ["5500-0000-0000-0004"] },
  "card number, plain (Amex)": { value: "charged 378282246310005", secrets: ["378282246310005"] },
  SSN: { value: "ssn 123-45-6789 on file", secrets: ["123-45-6789"] },
  "phone, international": { value: "call +1 415 555 0100", secrets: ["415 555 0100", "555 0100"] },
  "phone, US shape": { value: "(415) 555-0123", secrets: ["555-0123"] },
  "phone, dotted": { value: "415.555.0199", secrets: ["415.555.0199"] },
  IPv4: { value: "from 203.0.113.7", secrets: ["203.0.113.7"] },
  IPv6: { value: "from 2001:db8::1", secrets: ["2001:db8::1"] },
  UUID: { value: "user 0b9e1d2c-7a44-4f0e-8c1b-5e6f7a8b9c0d", secrets: ["0b9e1d2c-7a44"] },
  "URL credentials and query": { value: "https://bob:pw123@api.acme.io/x?token=zzz9", secrets: ["bob:", "pw123", "zzz9"] },
  "SQL with literals": { value: "SELECT * FROM users WHERE email='carol@corp.example' AND id=4711", secrets: ["carol", "4711"] },
  "path with a dotted name": { value: "/patients/jane.doe/records", secrets: ["jane.doe", "jane"] },
  "method and path with a dotted name": { value: "GET /users/john.smith/settings", secrets: ["john.smith"] },
  // Held out from the previous filter's corpus (issue 32): each of these walked through a filter of detectors.
  "e-mail, zero-width space": { value: "alice\u200b@corp.example", secrets: ["alice", "corp.example"] },
  "e-mail, fullwidth at sign": { value: "alice＠corp.example", secrets: ["alice", "corp.example"] },
  "e-mail, %2540": { value: "alice%2540corp.example", secrets: ["alice", "corp.example"] },
  "e-mail, percent-encoded +tag": { value: "alice%2Bpayroll%40corp.example", secrets: ["alice", "payroll", "corp.example"] },
  "e-mail, intranet host without a dot": { value: "alice@intranet", secrets: ["alice"] },
  "card number, dots": { value: "card 4111.1111.1111.1111", secrets: ["4111", "1111"] },
  "card number, double spaces": { value: "card 4111  1111  1111  1111", secrets: ["4111", "1111"] },
  "card number, slashes": { value: "card 4111/1111/1111/1111", secrets: ["4111", "1111"] },
  "phone, spaced": { value: "call 415 555 0100", secrets: ["415", "555", "0100"] },
  "phone, one number": { value: "call 4155550100", secrets: ["4155550100"] },
  "IP inside a host name": { value: "host ip-10-1-2-3.ec2.internal down", secrets: ["10-1-2-3", "10.1.2.3"] },
  "IP as one decimal integer": { value: "from 3232235777", secrets: ["3232235777"] },
  "value after pw=": { value: "pw=Tr0ub4dor", secrets: ["Tr0ub4dor"] },
  "value after pass:": { value: "pass: swordfish", secrets: ["swordfish"] },
  "value after passphrase=": { value: "passphrase=correcthorse", secrets: ["correcthorse"] },
  "short session cookie": { value: "Cookie: sid=ab12", secrets: ["ab12"] },
  "short session value": { value: "session=x9k", secrets: ["x9k"] },
  "lower-case name in a path": { value: "/users/johnsmith", secrets: ["johnsmith"] },
  "lower-case name in a request": { value: "GET /users/johnsmith/settings", secrets: ["johnsmith"] },
  "name in a sentence": { value: "refund approved by Maria Garcia", secrets: ["maria", "garcia"] },
  // Leaks of the first v3 filter: names and values made only of English words.
  "lower-case name of English words": { value: "refund approved by mark green", secrets: ["mark green", "green"] },
  "a name first in the text": { value: "Bill approved the refund", secrets: ["bill "] },
  "credential value in a sentence": { value: "the password is swordfish", secrets: ["swordfish"] },
  "host name made of words": { value: "connected to payments.internal.corp", secrets: ["payments.internal", "internal.corp"] },
};

// /gateway: an outside payer's gateway balance. The browser wallet signs EIP-3009 and the vault's
// withdrawals (EIP-712); the public payer API relays them, so the wallet needs no gas. Plain
// browser JavaScript, loaded from our origin under a CSP that allows no inline script.
(() => {
  "use strict";

  const config = JSON.parse(document.getElementById("gateway-data").textContent);
  const $ = (id) => document.getElementById(id);
  const progress = $("progress");
  const say = (message, kind) => {
    progress.textContent = message;
    progress.dataset.kind = kind;
  };
  let account = null;

  // "1.5" → 1500000n: USDC's six decimals, in integers (never a float).
  function units(input) {
    const m = /^(\d{1,12})(?:\.(\d{1,6}))?$/.exec(String(input).trim());
    return m ? BigInt(m[1]) * 1000000n + BigInt((m[2] ?? "").padEnd(6, "0")) : null;
  }

  const randomNonce = () =>
    "0x" +
    Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0"))
      .join("");

  const wallet = () => {
    const eth = globalThis.ethereum;
    if (!eth || typeof eth.request !== "function") {
      throw new Error(
        "No browser wallet was found. Install a wallet extension, or open this page in your wallet's browser.",
      );
    }
    return eth;
  };

  async function onChain(eth) {
    const chainHex = "0x" + config.chainId.toString(16);
    const current = await eth.request({ method: "eth_chainId" });
    if (String(current).toLowerCase() !== chainHex) {
      await eth.request({ method: "wallet_switchEthereumChain", params: [{ chainId: chainHex }] });
    }
  }

  // Ten minutes from the later of this clock and the chain's (the contracts check the chain's).
  async function deadline(eth) {
    const block = await eth.request({ method: "eth_getBlockByNumber", params: ["latest", false] });
    const chainNow = block && block.timestamp ? Number(BigInt(block.timestamp)) : 0;
    return Math.max(Math.floor(Date.now() / 1000), chainNow) + 600;
  }

  const DOMAIN_TYPE = [
    { name: "name", type: "string" },
    { name: "version", type: "string" },
    { name: "chainId", type: "uint256" },
    { name: "verifyingContract", type: "address" },
  ];

  async function signTyped(eth, primaryType, fields, domain, message) {
    const typed = {
      types: { EIP712Domain: DOMAIN_TYPE, [primaryType]: fields },
      primaryType,
      domain,
      message,
    };
    return await eth.request({
      method: "eth_signTypedData_v4",
      params: [account, JSON.stringify(typed)],
    });
  }

  async function post(path, body) {
    const res = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      const more = data.withdrawable ?? data.balance;
      throw new Error(
        (data.error || `The service answered ${res.status}.`) +
          (more !== undefined ? ` (${more} USDC)` : ""),
      );
    }
    return data;
  }

  async function refresh() {
    const res = await fetch(`/api/x402/payer/balance?address=${account}`);
    const b = await res.json();
    if (!res.ok) throw new Error(b.error || "The balance could not be read.");
    $("gw-address").textContent = b.address;
    const show = (name, text) => {
      document.querySelector(`[data-balance="${name}"]`).textContent = text;
    };
    show("wallet", `${b.wallet.balance} USDC`);
    show("available", `${b.gateway.available} USDC`);
    show("outgoing", `${b.pending.outgoing} USDC`);
    show("withdrawing", `${b.gateway.withdrawing} USDC`);
    show("withdrawable", `${b.withdrawal.maxAmount} USDC`);
    show("matures", b.withdrawal.withdrawableAt ?? "—");
    $("balance-panel").hidden = false;
    $("actions-panel").hidden = false;
    $("connect-button").hidden = true;
  }

  async function run(work) {
    const buttons = document.querySelectorAll("button");
    buttons.forEach((b) => (b.disabled = true));
    say("Waiting for your wallet…", "info");
    try {
      const eth = wallet();
      if (!account) {
        const accounts = await eth.request({ method: "eth_requestAccounts" });
        account = Array.isArray(accounts) ? accounts[0] : null;
        if (!account) throw new Error("The wallet did not share an account.");
      }
      await onChain(eth);
      const done = await work(eth);
      await refresh();
      say(done, "ok");
    } catch (err) {
      say(
        err && err.code === 4001
          ? "The request was rejected in your wallet."
          : (err && err.message) || "The wallet could not complete the request.",
        "error",
      );
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  const amountOf = (id) => {
    const value = units($(id).value);
    if (value === null || value === 0n) {
      throw new Error("Enter an amount in USDC greater than 0, with at most 6 decimal places.");
    }
    return value;
  };

  $("connect-button").addEventListener(
    "click",
    () => run(() => "Connected. Sign to deposit or withdraw; no gas is needed."),
  );

  $("deposit-button").addEventListener("click", () =>
    run(async (eth) => {
      const value = amountOf("deposit-amount");
      const message = {
        from: account,
        to: config.vault,
        value: value.toString(),
        validAfter: "0",
        validBefore: String(await deadline(eth)),
        nonce: randomNonce(),
      };
      const signature = await signTyped(eth, "ReceiveWithAuthorization", [
        { name: "from", type: "address" },
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ], {
        name: config.usdcName,
        version: config.usdcVersion,
        chainId: config.chainId,
        verifyingContract: config.usdc,
      }, message);
      const r = await post("/api/x402/payer/deposit", { authorization: message, signature });
      return `Deposited ${r.amount} USDC.`;
    }));

  const vaultDomain = () => ({
    name: "GatewayVault",
    version: "1",
    chainId: config.chainId,
    verifyingContract: config.vault,
  });

  const withdrawal = (start) => async (eth) => {
    const value = amountOf("withdraw-amount");
    const message = {
      account,
      ...(start ? {} : { to: account }),
      value: value.toString(),
      validBefore: String(await deadline(eth)),
      nonce: randomNonce(),
    };
    const fields = [
      { name: "account", type: "address" },
      ...(start ? [] : [{ name: "to", type: "address" }]),
      { name: "value", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
    ];
    const signature = await signTyped(
      eth,
      start ? "InitiateWithdrawal" : "Withdraw",
      fields,
      vaultDomain(),
      message,
    );
    const path = start ? "/api/x402/payer/withdraw/start" : "/api/x402/payer/withdraw";
    const r = await post(path, { authorization: message, signature });
    return start
      ? `Withdrawal of ${r.amount} USDC started: withdrawable from ${r.withdrawableAt}.`
      : `Withdrew ${r.amount} USDC to ${r.recipient}.`;
  };

  $("withdraw-button").addEventListener("click", () => run(withdrawal(false)));
  $("start-button")?.addEventListener("click", () => run(withdrawal(true)));
})();

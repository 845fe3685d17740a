/** A stream row as the module sees it (amounts in base units, addresses lower case). */
export interface StreamRow {
  id: string;
  merchantId: string;
  reference: string;
  profile: string;
  chainId: number;
  senderWalletId: string;
  senderSca: `0x${string}`;
  receiverSca: `0x${string}`;
  rate: bigint;
  deposit: bigint;
  withdrawn: bigint;
  status: "ACTIVE" | "STOPPED" | "COMPLETED";
  contractAddress: string;
  txHash: string;
  startedAt: Date;
  endsAt: Date;
  stoppedAt: Date | null;
  stopTxHash: string | null;
  webhookUrl: string | null;
  createdAt: Date;
}

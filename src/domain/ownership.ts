/**
 * Incident ownership from the topology graph: an incident whose alert (or creator) names a
 * service gets that service's team as owner, and a service rated at or above this criticality
 * marks its incidents for immediate on-call attention (interface: "services rated 8 to 10
 * trigger immediate on-call alerts").
 */
export const IMMEDIATE_ATTENTION_CRITICALITY = 8;

export interface Ownership {
  serviceId: string;
  ownerTeam: string | null;
  criticality: number;
  immediateAttention: boolean;
}

export function ownershipOf(service: { id: string; team: string | null; criticality: number }): Ownership {
  return {
    serviceId: service.id,
    ownerTeam: service.team,
    criticality: service.criticality,
    immediateAttention: service.criticality >= IMMEDIATE_ATTENTION_CRITICALITY,
  };
}

/** What `incident.created` carries about ownership (no service matched: service name only). */
export function ownershipPayload(service: string | null, ownership: Ownership | undefined): Record<string, unknown> {
  return {
    service,
    serviceId: ownership?.serviceId ?? null,
    ownerTeam: ownership?.ownerTeam ?? null,
    immediateAttention: ownership?.immediateAttention ?? false,
    ...(ownership ? { criticality: ownership.criticality } : {}),
  };
}

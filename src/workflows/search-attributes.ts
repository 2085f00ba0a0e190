import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Custom search attributes that let an SRE find and filter incidents in the Temporal UI. */
export const TenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const IncidentStatusKey = defineSearchAttributeKey('IncidentStatus', SearchAttributeType.KEYWORD);
export const SeverityKey = defineSearchAttributeKey('Severity', SearchAttributeType.KEYWORD);
export const SourceKey = defineSearchAttributeKey('Source', SearchAttributeType.KEYWORD);

export const customSearchAttributes = [TenantIdKey, IncidentStatusKey, SeverityKey, SourceKey] as const;

/**
 * LTI 1.3's own words: claim names, message types, scopes and media types, as the 1EdTech specifications
 * spell them (LTI Core 1.3, Deep Linking 2.0, AGS 2.0, Dynamic Registration 1.0).
 */
const LTI = 'https://purl.imsglobal.org/spec/lti/claim/';

export const CLAIMS = {
  messageType: `${LTI}message_type`,
  version: `${LTI}version`,
  deploymentId: `${LTI}deployment_id`,
  targetLinkUri: `${LTI}target_link_uri`,
  resourceLink: `${LTI}resource_link`,
  roles: `${LTI}roles`,
  context: `${LTI}context`,
  toolPlatform: `${LTI}tool_platform`,
  custom: `${LTI}custom`,
  ags: 'https://purl.imsglobal.org/spec/lti-ags/claim/endpoint',
  deepLinkingSettings: 'https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings',
  contentItems: 'https://purl.imsglobal.org/spec/lti-dl/claim/content_items',
  deepLinkingData: 'https://purl.imsglobal.org/spec/lti-dl/claim/data',
  deepLinkingMessage: 'https://purl.imsglobal.org/spec/lti-dl/claim/msg',
} as const;

export const LTI_VERSION = '1.3.0';

export const MESSAGE_TYPES = {
  resourceLink: 'LtiResourceLinkRequest',
  deepLinking: 'LtiDeepLinkingRequest',
  deepLinkingResponse: 'LtiDeepLinkingResponse',
} as const;

export const AGS_SCOPE = {
  lineItem: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
  lineItemReadonly: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly',
  resultReadonly: 'https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly',
  score: 'https://purl.imsglobal.org/spec/lti-ags/scope/score',
} as const;

export const ALL_AGS_SCOPES: readonly string[] = Object.values(AGS_SCOPE);

/** Assignment and Grade Services 2.0's media types. */
export const AGS_MEDIA_TYPES = {
  lineItem: 'application/vnd.ims.lis.v2.lineitem+json',
  lineItemContainer: 'application/vnd.ims.lis.v2.lineitemcontainer+json',
  score: 'application/vnd.ims.lis.v1.score+json',
} as const;

/** A client assertion may live at most this long (`exp - iat`), as LTI Advantage's security framework asks. */
export const MAX_ASSERTION_LIFETIME_SECONDS = 300;

export const TOOL_CONFIGURATION = 'https://purl.imsglobal.org/spec/lti-tool-configuration';
export const PLATFORM_CONFIGURATION = 'https://purl.imsglobal.org/spec/lti-platform-configuration';

/**
 * The custom parameters the service asks every LMS for (decision LTI-12): the course copy chain, in the
 * LTI variable and in Canvas's own.
 */
export const CUSTOM_PARAMETERS = {
  context_history: '$Context.id.history',
  canvas_previous_context_ids: '$Canvas.course.previousContextIds',
} as const;

/** The custom parameter a Deep Linking content item carries: the placement's own resource link (LTI-13). */
export const PLACEMENT_PARAMETER = 'tis_placement';

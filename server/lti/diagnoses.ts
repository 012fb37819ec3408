/**
 * What a refusal means to the school's LMS administrator (decision LTI-126): for each refusal code, the
 * reason in plain words and what to change, kept with the refusal (`server/lti/refusal-log.ts`) and shown
 * by the dashboard, the API and `tis lms refusal`. The page the person saw still says only the report ID.
 */
export interface Diagnosis {
  reason: string;
  advice: string;
}

type Explain = (where: { publicUrl: string }) => Diagnosis;

const CLOCK: Explain = () => ({
  reason: "The id_token's times are out of range: it had expired, or it says it was issued in the future. Usually one of the two clocks is wrong, or the person took too long between the LMS and the service.",
  advice: "Check that the LMS's and the service's servers keep time by NTP: the service allows 5 seconds of difference. If the clocks are right, open the activity again from the course.",
});

const NOT_LTI13: Explain = ({ publicUrl }) => ({
  reason: 'The LMS sent a message this service does not serve: only LTI 1.3 resource-link launches and Deep Linking requests are.',
  advice: `Use an LTI 1.3 (Advantage) tool configuration whose launch and redirect URI is ${publicUrl}/lti/launch; an LTI 1.1 link or another message type cannot open this service.`,
});

const AUDIENCE: Explain = () => ({
  reason: "The id_token was issued to another client ID than this registration's.",
  advice: "The client ID of the registration must be the one the LMS shows for the tool (Canvas: the developer key's ID; Moodle: the tool's Client ID). Correct it, or register the LMS again.",
});

const DEPLOYMENT: Explain = () => ({
  reason: "The deployment ID is missing, too long, or not the one the LMS named when the login started: the LMS mixed up two installations of the tool.",
  advice: "Check the tool's deployment in the LMS (Canvas: the deployment ID of the app in the course or account; Moodle: the tool's site-level configuration). Every launch must come from one deployment of the registered client.",
});

const CATALOGUE: Readonly<Record<string, Explain>> = {
  login_incomplete: ({ publicUrl }) => ({
    reason: 'The LMS started a login without iss, login_hint or target_link_uri.',
    advice: `Check that the tool's OpenID Connect login URL in the LMS is ${publicUrl}/lti/login and that the tool is configured as LTI 1.3.`,
  }),
  unknown_registration: () => ({
    reason: 'The LMS named an issuer and client ID the service has no registration for.',
    advice: "Register this LMS (Dynamic Registration, or by hand on the LMS registrations page or with tis lms add), or correct the client ID in the LMS's tool settings to the registration's.",
  }),
  registration_not_active: () => ({
    reason: "This LMS's registration is not active (pending or deactivated), so its launches are refused.",
    advice: 'Activate the registration on the dashboard\'s LMS registrations page, or run tis lms activate with its ID.',
  }),
  foreign_target: ({ publicUrl }) => ({
    reason: 'The launch names a target link URI that is not on this service.',
    advice: `Set the tool's target link URI and redirect URI in the LMS to ${publicUrl}/lti/launch, and check that the service's PUBLIC_URL is the address the LMS uses.`,
  }),
  bad_deployment: DEPLOYMENT,
  no_deployment: DEPLOYMENT,
  deployment_mismatch: DEPLOYMENT,
  auth_url_rule: () => ({
    reason: "The registration's OIDC authorization URL breaks the service's URL rules (a public https URL).",
    advice: 'Register the LMS again with its correct authorization endpoint.',
  }),
  not_a_form: ({ publicUrl }) => ({
    reason: 'The LMS did not post an HTML form to the service.',
    advice: `Check that the LMS's redirect URI is ${publicUrl}/lti/launch and that nothing between the LMS and the service rewrites the request.`,
  }),
  no_state: ({ publicUrl }) => ({
    reason: 'The launch arrived without its state or id_token.',
    advice: `The LMS must post the id_token and state to ${publicUrl}/lti/launch; open links from the course rather than from a bookmark of the launch URL.`,
  }),
  no_id_token: ({ publicUrl }) => ({
    reason: 'The launch arrived without its state or id_token.',
    advice: `The LMS must post the id_token and state to ${publicUrl}/lti/launch; open links from the course rather than from a bookmark of the launch URL.`,
  }),
  unknown_state: () => ({
    reason: 'The launch names no login in progress: the login is older than 10 minutes, the launch was posted twice (reload, back button), or the login went to another instance of the service that does not share its database.',
    advice: 'Open the activity again from the course. If this keeps happening with several instances, give them all the same DATABASE_URL.',
  }),
  state_not_bound: () => ({
    reason: "The browser did not send back the cookie the service set at login, and the LMS offers no platform storage: your LMS opens the tool in a frame and the browser blocks this service's cookies there (third-party cookies).",
    advice: "Open the tool in a new window (the link's or the tool's launch setting in the LMS), or turn on the LMS's LTI platform storage (recent Canvas and Moodle send lti_storage_target), or let the browser accept this service's cookies in the LMS frame.",
  }),
  malformed_token: () => ({
    reason: 'The id_token is not a signed JWT.',
    advice: 'Something altered the launch between the LMS and the service (a proxy or filter); check it.',
  }),
  bad_alg: () => ({
    reason: 'The id_token is not signed with RS256, which LTI 1.3 requires.',
    advice: "Check the LMS's LTI key settings; RS256 is the only algorithm LTI 1.3 allows.",
  }),
  no_kid: () => ({
    reason: "The id_token's header names no signing key (kid).",
    advice: "Check the LMS's LTI key settings; its id_tokens must name their key.",
  }),
  unknown_kid: () => ({
    reason: "The key that signed the id_token is not in the LMS's public keys (JWKS), or the JWKS could not be fetched (see the detail).",
    advice: "Check the registration's JWKS URL: it must answer from the service's network and list the LMS's current keys (after a key rotation, the new key).",
  }),
  bad_signature: () => ({
    reason: "The id_token's signature does not verify with the LMS's public key.",
    advice: "Check that the registration's JWKS URL belongs to this LMS; a JWKS of another LMS or an old key set does not verify its launches.",
  }),
  expired: CLOCK,
  iat_in_future: CLOCK,
  bad_iat: CLOCK,
  bad_exp: CLOCK,
  bad_nbf: CLOCK,
  bad_iss: () => ({
    reason: "The id_token's issuer is not the registration's.",
    advice: "The registration's issuer must be exactly the LMS's (for hosted Canvas https://canvas.instructure.com, for Moodle the site URL), with no trailing slash.",
  }),
  bad_aud: AUDIENCE,
  bad_azp: AUDIENCE,
  nonce_mismatch: () => ({
    reason: "The id_token's nonce is not the one the login asked for.",
    advice: 'The LMS must return the nonce of the authentication request; check that no cache or proxy answers the LMS\'s authorization endpoint.',
  }),
  nonce_replayed: () => ({
    reason: 'This id_token was used before: a replayed launch.',
    advice: 'A launch page reloaded or posted twice is refused on purpose; open the activity again from the course. Many of these from one address is an attack.',
  }),
  invalid_token: () => ({
    reason: 'The id_token could not be verified.',
    advice: "Check the registration's issuer, client ID and JWKS URL against the LMS's tool configuration.",
  }),
  bad_version: NOT_LTI13,
  bad_message_type: NOT_LTI13,
  anonymous: () => ({
    reason: "The LMS launched without the person's identity (sub).",
    advice: "Set the tool's privacy settings in the LMS to send at least the user's ID (Canvas: privacy level other than anonymous).",
  }),
  no_context: () => ({
    reason: 'The launch came from outside a course (no context).',
    advice: 'Place the tool in a course: the service keeps every tool\'s data per course.',
  }),
  no_resource_link: () => ({
    reason: 'The launch has no resource link ID.',
    advice: 'Check the placement in the LMS: a resource-link launch must name its link.',
  }),
  link_not_set_up: () => ({
    reason: 'A student opened a link no instructor has set up yet.',
    advice: "An instructor opens the link once and chooses the tool's activity, or adds the activity through the LMS's content picker (Deep Linking).",
  }),
  no_return_url: () => ({
    reason: 'The Deep Linking request has no return URL.',
    advice: "Check the LMS's Deep Linking placement of the tool; the request must carry deep_link_return_url.",
  }),
  no_resource_link_type: () => ({
    reason: 'The Deep Linking request does not accept resource links, the only content the service adds.',
    advice: 'Use a Deep Linking placement that accepts LTI resource links (Canvas: assignment or module selection; Moodle: the activity chooser).',
  }),
  not_staff: () => ({
    reason: 'Someone who is not an instructor, assistant or manager opened the content picker.',
    advice: "Check the person's role in the course; only staff add activities.",
  }),
  return_url_rule: () => ({
    reason: "The Deep Linking return URL breaks the service's URL rules (a public https URL).",
    advice: "Check the LMS's public address; the return URL must be https and resolve to a public address.",
  }),
  choice_expired: () => ({
    reason: 'The picker was left open more than 10 minutes, or submitted twice.',
    advice: 'Open the picker again from the LMS.',
  }),
  nothing_chosen: () => ({
    reason: 'The picker was confirmed without an activity.',
    advice: 'Tick at least one activity before adding.',
  }),
  registration_failed: () => ({
    reason: 'Dynamic Registration failed (see the detail: the LMS\'s configuration, the registration endpoint or its answer).',
    advice: "Start the registration again from the LMS with a fresh registration URL; if the detail names a URL rule, the LMS's addresses must be public https URLs.",
  }),
};

/** The diagnosis of a refusal code; one for every code, a generic one for codes of the placement rules. */
export function diagnose(code: string, where: { publicUrl: string }): Diagnosis {
  const explain = CATALOGUE[code];
  if (explain) return explain(where);
  return {
    reason: `The request was refused (${code}).`,
    advice: 'The detail says what the service found; send the report ID to the service\'s platform team if it does not say enough.',
  };
}

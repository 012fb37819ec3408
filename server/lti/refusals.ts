/**
 * Why the service refuses an LMS request (decision LTI-09): a status and a code for the page, and a reason
 * for the log only. The person sees a plain page with the report ID; the reason never reaches the page,
 * so no token or LMS detail is echoed.
 */
export type RefusalStatus = 400 | 401 | 403 | 404 | 502;

export interface LtiRefusal {
  status: RefusalStatus;
  /** A word for the log and the page's kind. */
  code: string;
  /** For the log line only. */
  reason: string;
}

export function refuse(status: RefusalStatus, code: string, reason: string): LtiRefusal {
  return { status, code, reason };
}

const PAGE_TEXT: Readonly<Record<RefusalStatus, { heading: string; text: string }>> = {
  400: {
    heading: 'This launch could not be completed',
    text: 'The request from your learning platform was incomplete or has expired. Go back to your course and open the activity again.',
  },
  401: {
    heading: 'This launch could not be verified',
    text: 'The request from your learning platform could not be verified. Go back to your course and open the activity again; if this keeps happening, send the report ID to your school\'s support team.',
  },
  403: {
    heading: 'This learning platform is not connected yet',
    text: 'Your school\'s connection to this service has not been activated by the platform team. Send the report ID to your school\'s support team.',
  },
  404: {
    heading: 'This activity is not set up yet',
    text: 'Your instructor has not chosen a tool for this activity yet. Try again later.',
  },
  502: {
    heading: 'The learning platform did not answer as expected',
    text: 'Try again; if this keeps happening, send the report ID to your school\'s support team.',
  },
};

export function refusalText(refusal: LtiRefusal): { heading: string; text: string } {
  return PAGE_TEXT[refusal.status];
}
